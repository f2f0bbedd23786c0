#include "fleetscope/agent_link/link_client.h"

#include <sys/socket.h>

#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include "FleetscopeAgentLink.h"

namespace fleetscope::agent_link {

using apache::thrift::transport::TSocket;

class Connection {
 public:
  Connection(const LinkOptions& options, int receive_timeout_ms) {
    auto config = make_configuration(options.limits);
    socket_ = std::make_shared<TSocket>(options.socket_path, config);
    socket_->setConnTimeout(options.io_timeout_ms);
    socket_->setSendTimeout(options.io_timeout_ms);
    socket_->setRecvTimeout(receive_timeout_ms);
    transport_ = std::make_shared<apache::thrift::transport::TFramedTransport>(socket_, config);
    client_ = std::make_unique<rpc::FleetscopeAgentLinkClient>(make_protocol(transport_, options.limits));
    transport_->open();
  }
  ~Connection() {
    try {
      transport_->close();
    } catch (...) {
    }
  }
  rpc::FleetscopeAgentLinkClient& client() { return *client_; }
  // Wakes a thread blocked in a call on this connection (it then sees an error).
  void interrupt() {
    if (socket_->isOpen()) ::shutdown(socket_->getSocketFD(), SHUT_RDWR);
  }

 private:
  std::shared_ptr<TSocket> socket_;
  std::shared_ptr<apache::thrift::transport::TTransport> transport_;
  std::unique_ptr<rpc::FleetscopeAgentLinkClient> client_;
};

ControlLoop::ControlLoop(LinkOptions options, ProcessFacts facts, Callbacks callbacks)
    : options_(std::move(options)), facts_(std::move(facts)), callbacks_(std::move(callbacks)) {}

ControlLoop::~ControlLoop() { stop(); }

void ControlLoop::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void ControlLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (control_) control_->interrupt();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard data_lock(data_mutex_);
  data_.reset();
}

std::string ControlLoop::last_error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

bool ControlLoop::ensure_control() {
  try {
    auto connection = std::make_unique<Connection>(options_, options_.poll_timeout_ms + options_.io_timeout_ms);
    rpc::AgentHello hello;
    hello.pid = facts_.pid;
    hello.parent_chain = facts_.parent_chain;
    hello.devices = facts_.devices;
    hello.workflow = facts_.workflow.name;
    hello.workflow_source = facts_.workflow.source;
    if (!facts_.command.empty()) hello.__set_command(facts_.command);
    rpc::AgentWelcome welcome;
    connection->client().registerAgent(welcome, hello);
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
      control_ = std::move(connection);
    }
    agent_id_ = welcome.agent_id;
    ++registrations_;
    if (callbacks_.on_registered) callbacks_.on_registered(welcome.agent_id);
    return true;
  } catch (const std::exception& e) {
    std::lock_guard lock(mutex_);
    error_ = std::string("daemon at ") + options_.socket_path + ": " + e.what();
    return false;
  }
}

void ControlLoop::run() {
  while (!stopping_) {
    if (!control_ && !ensure_control()) {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(options_.reconnect_ms), [&] { return stopping_.load(); });
      continue;
    }
    rpc::AgentOrder order;
    try {
      control_->client().awaitOrder(order, agent_id_, options_.poll_timeout_ms);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex_);
        error_ = std::string("daemon connection lost: ") + e.what();
        control_.reset();
      }
      agent_id_ = 0;
      if (!stopping_ && callbacks_.on_disconnected) callbacks_.on_disconnected();
      continue;
    }
    if (order.kind != rpc::AgentOrderKind::NOTHING && callbacks_.on_order) callbacks_.on_order(order);
  }
  std::lock_guard lock(mutex_);
  control_.reset();
}

template <class Call>
bool ControlLoop::with_data(Call&& call) {
  std::lock_guard lock(data_mutex_);
  if (agent_id_ <= 0 || stopping_) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (!data_) data_ = std::make_unique<Connection>(options_, options_.io_timeout_ms);
      call(data_->client());
      return true;
    } catch (const rpc::InvalidRequest& refused) {  // the daemon answered: do not retry
      std::lock_guard error_lock(mutex_);
      error_ = "daemon refused: " + refused.message;
      return false;
    } catch (const std::exception& e) {  // stale connection after a daemon restart: one retry
      data_.reset();
      std::lock_guard error_lock(mutex_);
      error_ = std::string("daemon unreachable: ") + e.what();
    }
  }
  return false;
}

bool ControlLoop::push(const rpc::RecordBatch& batch) {
  return with_data([&](rpc::FleetscopeAgentLinkClient& client) { client.pushRecords(agent_id_, batch); });
}

bool ControlLoop::window_closed(const rpc::WindowClosed& closed) {
  return with_data([&](rpc::FleetscopeAgentLinkClient& client) { client.windowClosed(agent_id_, closed); });
}

}  // namespace fleetscope::agent_link
