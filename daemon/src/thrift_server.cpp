#include "fleetscope/daemon/thrift_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <sys/resource.h>
#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>

#include <thrift/server/TThreadedServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSSLServerSocket.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>

#include "FleetscopeAgentLink.h"
#include "FleetscopeHost.h"
#include "fleetscope/daemon/guarded_transport.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/daemon/tls_listener.h"

namespace fleetscope::daemon {

using apache::thrift::TConfiguration;
using apache::thrift::TConnectionInfo;
using apache::thrift::server::TServerEventHandler;
using apache::thrift::server::TThreadedServer;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TServerSocket;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TSSLServerSocket;
using apache::thrift::transport::TTransport;

namespace {

// Accepted sockets carry the limits (TServerSocket would give them Thrift's defaults).
class LimitedServerSocket : public TServerSocket {
 public:
  LimitedServerSocket(const std::string& path, std::shared_ptr<TConfiguration> config)
      : TServerSocket(path), config_(std::move(config)) {}
  LimitedServerSocket(const std::string& address, int port, std::shared_ptr<TConfiguration> config)
      : TServerSocket(address, port), config_(std::move(config)) {}

 protected:
  std::shared_ptr<TSocket> createSocket(THRIFT_SOCKET client) override {
    if (interruptableChildren_)
      return std::make_shared<TSocket>(client, pChildInterruptSockReader_, config_);
    return std::make_shared<TSocket>(client, config_);
  }

 private:
  std::shared_ptr<TConfiguration> config_;
};

Caller identify(const TConnectionInfo& info, bool tcp) {
  // An unidentified caller is nobody: not root, and no process has its uid.
  Caller nobody{0, static_cast<uid_t>(-1)};
  auto socket = std::dynamic_pointer_cast<TSocket>(info.transport);
  if (!socket) return nobody;
  auto peer = tcp ? peer_of_loopback_tcp(socket->getSocketFD())
                  : peer_of_unix_socket(socket->getSocketFD());
  return peer.value_or(nobody);
}

// The generated interfaces, forwarded to the plain handlers.
// The caller is resolved at the first call: a TLS connection knows its certificate's user only
// once its handshake (done by the first read) has verified it.
class HostAdapter : public rpc::FleetscopeHostIf {
 public:
  HostAdapter(DaemonCore& core, std::function<Caller()> caller)
      : core_(core), caller_(std::move(caller)) {}
  void version(rpc::VersionInfo& out) override { out = handler().version(); }
  void listCaptures(std::vector<rpc::Capture>& out, const rpc::CaptureFilter& f) override {
    out = handler().list_captures(f);
  }
  void getCapture(rpc::Capture& out, const int64_t id) override { out = handler().get_capture(id); }
  void kernelsInWindow(rpc::KernelWindow& out, const rpc::KernelWindowRequest& r) override {
    out = handler().kernels_in_window(r);
  }
  void findings(std::vector<rpc::Finding>& out, const int64_t id) override {
    out = handler().findings(id);
  }
  void startTrace(rpc::TraceStarted& out, const rpc::TraceRequest& r) override {
    out = handler().start_trace(r);
  }
  void status(rpc::DaemonStatus& out) override { out = handler().status(); }
  void jobs(std::vector<rpc::Job>& out) override { out = handler().jobs(); }
  void metrics(std::vector<rpc::WorkflowMetric>& out, const rpc::MetricsQuery& q) override {
    out = handler().metrics(q);
  }
  void startTraceOfWorkflow(rpc::TraceStarted& out, const rpc::TraceByName& r) override {
    out = handler().start_trace_of_workflow(r);
  }
  void traceProgress(rpc::TraceProgress& out, const int64_t id, const int32_t timeout_ms) override {
    out = handler().trace_progress(id, timeout_ms);
  }
  void requestLane(rpc::LaneGrant& out, const rpc::LaneRequest& r) override {
    out = handler().request_lane(r);
  }
  void awaitLane(rpc::LaneGrant& out, const int64_t id, const int32_t timeout_ms) override {
    out = handler().await_lane(id, timeout_ms);
  }
  void releaseLane(const int32_t pid) override { handler().release_lane(pid); }
  void shareStatus(rpc::ShareStatus& out) override { out = handler().share_status(); }
  void applyPlan(rpc::PlanApplied& out, const rpc::ApplyPlanRequest& r) override {
    out = handler().apply_plan(r);
  }
  void sharingOff() override { handler().sharing_off(); }
  void setAutomatic(const bool on, const double max_slowdown) override {
    handler().set_automatic(on, max_slowdown);
  }
  void sharingOn() override { handler().sharing_on(); }
  void removeStrayLedgers(std::vector<std::string>& out) override {
    out = handler().remove_stray_ledgers();
  }

 private:
  RpcHandler& handler() {
    if (!handler_) handler_.emplace(core_, caller_());
    return *handler_;
  }
  DaemonCore& core_;
  std::function<Caller()> caller_;
  std::optional<RpcHandler> handler_;
};

enum class Listener { unix_socket, loopback_tcp, tls };

class HostFactory : public rpc::FleetscopeHostIfFactory {
 public:
  HostFactory(DaemonCore& core, Listener listener) : core_(core), listener_(listener) {}
  rpc::FleetscopeHostIf* getHandler(const TConnectionInfo& info) override {
    if (listener_ == Listener::tls)
      return new HostAdapter(core_, [transport = info.transport] {
        auto uid = tls_peer_uid(transport);
        return uid ? Caller{0, *uid} : Caller{0, static_cast<uid_t>(-1)};
      });
    Caller caller = identify(info, listener_ == Listener::loopback_tcp);
    return new HostAdapter(core_, [caller] { return caller; });
  }
  void releaseHandler(rpc::FleetscopeDaemonIf* handler) override { delete handler; }

 private:
  DaemonCore& core_;
  Listener listener_;
};

class AgentAdapter : public rpc::FleetscopeAgentLinkIf {
 public:
  AgentAdapter(DaemonCore& core, Caller caller) : handler_(core, caller) {}
  void registerAgent(rpc::AgentWelcome& out, const rpc::AgentHello& hello) override {
    out = handler_.register_agent(hello);
  }
  void awaitOrder(rpc::AgentOrder& out, const int64_t id, const int32_t timeout_ms) override {
    out = handler_.await_order(id, timeout_ms);
  }
  int64_t pushRecords(const int64_t id, const rpc::RecordBatch& batch) override {
    // The generated processor decodes the arguments into a local, non-const args object that is
    // destroyed right after this call; taking the batch from it (instead of copying every row
    // and string) is what lets the daemon keep up with the agent.
    return handler_.push_records(id, std::move(const_cast<rpc::RecordBatch&>(batch)));
  }
  void windowClosed(const int64_t id, const rpc::WindowClosed& closed) override {
    handler_.window_closed(id, closed);
  }

 private:
  AgentLinkHandler handler_;
};

class AgentFactory : public rpc::FleetscopeAgentLinkIfFactory {
 public:
  explicit AgentFactory(DaemonCore& core) : core_(core) {}
  rpc::FleetscopeAgentLinkIf* getHandler(const TConnectionInfo& info) override {
    return new AgentAdapter(core_, identify(info, false));
  }
  void releaseHandler(rpc::FleetscopeAgentLinkIf* handler) override { delete handler; }

 private:
  DaemonCore& core_;
};

// Makes the socket file connectable by everyone once it exists, then reports readiness.
class ReadyHandler : public TServerEventHandler {
 public:
  explicit ReadyHandler(std::string path) : path_(std::move(path)) {}
  void preServe() override {
    if (!path_.empty()) ::chmod(path_.c_str(), 0666);
    std::lock_guard lock(mutex_);
    ready_ = true;
    changed_.notify_all();
  }
  void fail(const std::string& why) {
    std::lock_guard lock(mutex_);
    failure_ = why;
    changed_.notify_all();
  }
  // Empty when serving; else why not.
  std::string wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return ready_ || !failure_.empty(); }))
      return "timed out";
    return ready_ ? std::string() : failure_;
  }

 private:
  std::string path_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool ready_ = false;
  std::string failure_;
};

// A socket file left by a daemon that died is removed; one that answers belongs to a running
// daemon, which is an error.
void prepare_socket_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.size() >= sizeof(sockaddr_un{}.sun_path))
    throw std::runtime_error(path + ": socket path too long (max " +
                             std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + ")");
  fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;
  if (!S_ISSOCK(info.st_mode)) throw std::runtime_error(path + ": exists and is not a socket");
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  bool live = ::connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(probe);
  if (live) throw std::runtime_error(path + ": another daemon is serving this socket");
  ::unlink(path.c_str());
}

}  // namespace

std::shared_ptr<apache::thrift::TProcessor> make_host_processor(DaemonCore& core, Caller caller) {
  return std::make_shared<rpc::FleetscopeHostProcessor>(
      std::make_shared<HostAdapter>(core, [caller] { return caller; }));
}

std::shared_ptr<apache::thrift::TProcessor> make_agent_link_processor(DaemonCore& core,
                                                                      Caller caller) {
  return std::make_shared<rpc::FleetscopeAgentLinkProcessor>(
      std::make_shared<AgentAdapter>(core, caller));
}

struct ThriftServers::Served {
  std::shared_ptr<TThreadedServer> server;
  std::shared_ptr<ReadyHandler> ready;
  std::thread thread;
  std::string what;
  std::string path;
};

rpc::TransportLimits server_transport_limits(const DaemonConfig& config) {
  rpc::TransportLimits limits;
  limits.max_frame_bytes = static_cast<int32_t>(config.max_frame_bytes);
  limits.max_message_bytes = static_cast<int32_t>(config.max_message_bytes);
  limits.max_container_elements = kMaxBatchRows;
  return limits;
}

ConnectionLimits connection_limits(const DaemonConfig& config) {
  ConnectionLimits wanted;
  wanted.max_connections = static_cast<int>(config.max_connections);
  wanted.max_connections_per_uid = static_cast<int>(config.max_connections_per_uid);
  wanted.max_buffered_bytes = config.max_buffered_bytes;
  wanted.request_deadline = std::chrono::milliseconds(config.request_deadline_ms);
  rlimit files{};
  int64_t open_files = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                           ? static_cast<int64_t>(files.rlim_cur)
                           : 0;
  return effective_limits(wanted, open_files);
}

ThriftServers::ThriftServers(DaemonCore& core, const DaemonConfig& config)
    : core_(core),
      config_(config),
      limits_(server_transport_limits(config)),
      limiter_(ConnectionLimiter::create(connection_limits(config))) {}

ThriftServers::~ThriftServers() {
  stop();
}

void ThriftServers::start() {
  auto config = rpc::make_configuration(limits_);
  auto protocol = rpc::make_protocol_factory(limits_);
  const auto deadline = limiter_->limits().request_deadline;
  // `socket` is an AdmittingServerSocket (the TicketSource of its transports).
  auto add = [&](std::shared_ptr<TServerSocket> socket, std::shared_ptr<TicketSource> tickets,
                 std::shared_ptr<apache::thrift::TProcessorFactory> processor,
                 const std::string& what, const std::string& path, int idle_timeout_ms,
                 int64_t max_frame_bytes) {
    socket->setRecvTimeout(idle_timeout_ms);
    auto transport = std::make_shared<GuardedFramedFactory>(config, std::move(tickets),
                                                            static_cast<uint32_t>(max_frame_bytes),
                                                            idle_timeout_ms, deadline);
    auto served = std::make_shared<Served>();
    served->server = std::make_shared<TThreadedServer>(processor, socket, transport, protocol);
    served->ready = std::make_shared<ReadyHandler>(path);
    served->server->setServerEventHandler(served->ready);
    served->what = what;
    served->path = path;
    served->thread = std::thread([server = served->server, ready = served->ready, what] {
      try {
        server->serve();
      } catch (const std::exception& e) {
        ready->fail(e.what());
        std::fprintf(stderr, "fleetscoped: serving %s failed: %s\n", what.c_str(), e.what());
      }
    });
    served_.push_back(served);
    if (std::string why = served->ready->wait(std::chrono::seconds(10)); !why.empty())
      throw std::runtime_error("cannot serve " + what + ": " + why);
  };
  auto unix_uid = [](int fd) -> std::optional<uid_t> {
    if (auto peer = peer_of_unix_socket(fd)) return peer->uid;
    return std::nullopt;
  };
  auto admission = [&](const std::string& what, std::function<std::optional<uid_t>(int)> uid_of) {
    return Admission{limiter_, what, std::move(uid_of)};
  };
  check_listener_config(config_);
  prepare_socket_path(config_.socket);
  prepare_socket_path(config_.agent_socket);
  // API requests are small (the largest is a plan's JSON); record batches come on the agent link.
  const int64_t api_frame = std::min(config_.api_max_frame_bytes, config_.max_frame_bytes);
  // Idle connections are closed after a minute; an agent's control connection is never idle that
  // long (it polls every second or so).
  {
    const std::string what = "the API on " + config_.socket;
    auto socket = std::make_shared<AdmittingServerSocket<LimitedServerSocket>>(
        admission(what, unix_uid), config_.socket, config);
    add(socket, socket,
        std::make_shared<rpc::FleetscopeHostProcessorFactory>(
            std::make_shared<HostFactory>(core_, Listener::unix_socket)),
        what, config_.socket, 60'000, api_frame);
  }
  {
    const std::string what = "the agent link on " + config_.agent_socket;
    auto socket = std::make_shared<AdmittingServerSocket<LimitedServerSocket>>(
        admission(what, unix_uid), config_.agent_socket, config);
    add(socket, socket,
        std::make_shared<rpc::FleetscopeAgentLinkProcessorFactory>(
            std::make_shared<AgentFactory>(core_)),
        what, config_.agent_socket, 120'000, config_.max_frame_bytes);
  }
  if (config_.tcp_port > 0) {
    const bool tls = tls_configured(config_);
    const std::string what = "the API on " + std::string(tls ? "TLS " : "") + config_.tcp_address +
                             ":" + std::to_string(config_.tcp_port);
    const int port = static_cast<int>(config_.tcp_port);
    auto processor = std::make_shared<rpc::FleetscopeHostProcessorFactory>(
        std::make_shared<HostFactory>(core_, tls ? Listener::tls : Listener::loopback_tcp));
    if (tls) {
      // The certificate's user is known only after the handshake: until then its connections
      // count under one uid of their own (-1).
      auto socket = std::make_shared<AdmittingServerSocket<TSSLServerSocket>>(
          admission(what, nullptr), config_.tcp_address, port,
          make_tls_socket_factory(config_, config));
      add(socket, socket, processor, what, "", 60'000, api_frame);
    } else {
      auto socket = std::make_shared<AdmittingServerSocket<LimitedServerSocket>>(
          admission(what,
                    [](int fd) -> std::optional<uid_t> {
                      if (auto peer = peer_of_loopback_tcp(fd)) return peer->uid;
                      return std::nullopt;
                    }),
          config_.tcp_address, port, config);
      add(socket, socket, processor, what, "", 60'000, api_frame);
    }
  }
  const ConnectionLimits& in_force = limiter_->limits();
  std::fprintf(stderr,
               "fleetscoped: at most %d connections (%d per uid), %lld MiB of requests being "
               "read, %lld ms per request\n",
               in_force.max_connections, in_force.max_connections_per_uid,
               static_cast<long long>(in_force.max_buffered_bytes >> 20),
               static_cast<long long>(in_force.request_deadline.count()));
}

void ThriftServers::interrupt() {
  // Stops accepting and ends every connection waiting in a read; calls in progress finish.
  for (auto& served : served_) served->server->stop();
}

void ThriftServers::stop() {
  interrupt();
  for (auto& served : served_) {
    if (served->thread.joinable()) served->thread.join();
    if (!served->path.empty()) ::unlink(served->path.c_str());
  }
  served_.clear();
}

}  // namespace fleetscope::daemon
