#include "fleetscope/agent_link/link_client.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fleetscope/agent_link/wire.h"

namespace fleetscope::agent_link {

// One framed connection to the daemon's agent socket; calls are synchronous (one at a time).
class Connection {
 public:
  Connection(const LinkOptions& options, int receive_timeout_ms)
      : max_frame_(options.max_frame_bytes) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (options.socket_path.size() >= sizeof address.sun_path) {
      ::close(fd_);
      throw std::runtime_error("socket path too long: " + options.socket_path);
    }
    std::memcpy(address.sun_path, options.socket_path.c_str(), options.socket_path.size() + 1);
    timeval send_timeout{options.io_timeout_ms / 1000, (options.io_timeout_ms % 1000) * 1000};
    timeval receive_timeout{receive_timeout_ms / 1000, (receive_timeout_ms % 1000) * 1000};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &receive_timeout, sizeof receive_timeout);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      std::string why = std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error("connect " + options.socket_path + ": " + why);
    }
  }
  ~Connection() { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Wakes a thread blocked in call() on this connection (it then sees an error).
  void interrupt() { ::shutdown(fd_, SHUT_RDWR); }

  // Sends CALL `method` with the encoded argument fields; returns the REPLY's result struct
  // reader's bytes. A declared exception (field id >= 1 of the result) becomes Refused, an
  // application exception a runtime_error.
  std::string call(const std::string& method, const std::string& argument_fields) {
    wire::Writer message;
    message.message(method, wire::kCall, ++seqid_);
    message.raw(argument_fields);
    message.stop();
    send_frame(message.bytes());
    std::string reply = receive_frame();
    wire::Reader reader(reply);
    std::string name;
    wire::MessageType type;
    int32_t seqid = 0;
    reader.message(name, type, seqid);
    if (name != method || seqid != seqid_)
      throw wire::WireError("reply does not match the call " + method);
    if (type == wire::kException) {  // TApplicationException {1: message, 2: type}
      std::string text = "application error";
      int16_t id = 0;
      for (wire::Type t = reader.field(id); t != wire::kStop; t = reader.field(id)) {
        if (id == 1 && t == wire::kString)
          text = reader.str();
        else
          reader.skip(t);
      }
      throw std::runtime_error("fleetscoped: " + text);
    }
    if (type != wire::kReply) throw wire::WireError("unexpected message type");
    return reply.substr(4 + 4 + method.size() + 4);  // the result struct after the header
  }

 private:
  void send_frame(const std::string& payload) {
    wire::Writer frame;
    frame.i32(static_cast<int32_t>(payload.size()));
    frame.raw(payload);
    const std::string& bytes = frame.bytes();
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      sent += static_cast<size_t>(n);
    }
  }
  void receive(char* into, size_t size) {
    size_t got = 0;
    while (got < size) {
      ssize_t n = ::recv(fd_, into + got, size - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) throw std::runtime_error("the daemon closed the connection");
      if (n < 0) throw std::runtime_error(std::string("receive: ") + std::strerror(errno));
      got += static_cast<size_t>(n);
    }
  }
  std::string receive_frame() {
    char header[4];
    receive(header, 4);
    int32_t size = wire::Reader(std::string_view(header, 4)).i32();
    if (size < 0 || size > max_frame_)
      throw wire::WireError("reply frame of " + std::to_string(size) + " bytes refused");
    std::string payload(static_cast<size_t>(size), '\0');
    receive(payload.data(), payload.size());
    return payload;
  }

  int fd_ = -1;
  int32_t max_frame_;
  int32_t seqid_ = 0;
};

namespace {

// The result struct of a call: field 0 (success) of the expected type is handed to `success`,
// field 1 (InvalidRequest) becomes Refused.
template <class OnSuccess>
void read_result(const std::string& result, OnSuccess&& success,
                 wire::Type success_type = wire::kStruct) {
  wire::Reader reader(result);
  int16_t id = 0;
  for (wire::Type t = reader.field(id); t != wire::kStop; t = reader.field(id)) {
    if (id == 0 && t == success_type) {
      success(reader);
    } else if (id == 1 && t == wire::kStruct) {  // InvalidRequest {1: message, 2: field}
      std::string message = "refused";
      int16_t fid = 0;
      for (wire::Type ft = reader.field(fid); ft != wire::kStop; ft = reader.field(fid)) {
        if (fid == 1 && ft == wire::kString)
          message = reader.str();
        else
          reader.skip(ft);
      }
      throw Refused(message);
    } else {
      reader.skip(t);
    }
  }
}

}  // namespace

ControlLoop::ControlLoop(LinkOptions options, ProcessFacts facts, Callbacks callbacks)
    : options_(std::move(options)), facts_(std::move(facts)), callbacks_(std::move(callbacks)) {}

ControlLoop::~ControlLoop() {
  stop();
}

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
    auto connection =
        std::make_unique<Connection>(options_, options_.poll_timeout_ms + options_.io_timeout_ms);
    // registerAgent(1: AgentHello hello)
    wire::Writer args;
    args.field(wire::kStruct, 1);
    args.i32_field(1, facts_.pid);
    args.field(wire::kList, 2),
        args.list(wire::kI32, static_cast<int32_t>(facts_.parent_chain.size()));
    for (int pid : facts_.parent_chain) args.i32(pid);
    args.field(wire::kList, 3), args.list(wire::kI32, static_cast<int32_t>(facts_.devices.size()));
    for (int device : facts_.devices) args.i32(device);
    args.str_field(4, facts_.workflow.name);
    args.str_field(5, facts_.workflow.source);
    if (!facts_.command.empty()) args.str_field(6, facts_.command);
    args.i32_field(8, 2);  // protocol_version: the records of schema/tables.py
    if (!facts_.labels.empty()) {
      args.field(wire::kList, 9);
      args.list(wire::kString, static_cast<int32_t>(facts_.labels.size()));
      for (const auto& label : facts_.labels) args.str(label);
    }
    args.stop();
    int64_t agent_id = 0;
    int32_t max_rows = 0;
    read_result(connection->call("registerAgent", args.bytes()), [&](wire::Reader& r) {
      int16_t id = 0;
      for (wire::Type t = r.field(id); t != wire::kStop; t = r.field(id)) {
        if (id == 1 && t == wire::kI64)
          agent_id = r.i64();
        else if (id == 2 && t == wire::kI32)
          max_rows = r.i32();
        else
          r.skip(t);
      }
    });
    if (agent_id <= 0) throw wire::WireError("registerAgent answered without an agent id");
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
      control_ = std::move(connection);
    }
    agent_id_ = agent_id;
    if (max_rows > 0) max_batch_rows_ = max_rows;
    ++registrations_;
    if (callbacks_.on_registered) callbacks_.on_registered(agent_id);
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
      wake_.wait_for(lock, std::chrono::milliseconds(options_.reconnect_ms),
                     [&] { return stopping_.load(); });
      continue;
    }
    Order order;
    try {
      // awaitOrder(1: i64 agent_id, 2: i32 timeout_ms)
      wire::Writer args;
      args.i64_field(1, agent_id_);
      args.i32_field(2, options_.poll_timeout_ms);
      read_result(control_->call("awaitOrder", args.bytes()), [&](wire::Reader& r) {
        int16_t id = 0;
        for (wire::Type t = r.field(id); t != wire::kStop; t = r.field(id)) {
          if (id == 1 && t == wire::kI32)
            order.kind = static_cast<Order::Kind>(r.i32());
          else if (id == 2 && t == wire::kI64)
            order.capture_id = r.i64();
          else if (id == 3 && t == wire::kI32)
            order.duration_ms = r.i32();
          else if (id == 4 && t == wire::kI32)
            order.iterations = r.i32();
          else
            r.skip(t);
        }
      });
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
    if (order.kind != Order::nothing && callbacks_.on_order) callbacks_.on_order(order);
  }
  std::lock_guard lock(mutex_);
  control_.reset();
}

template <class Call, class OnSuccess>
bool ControlLoop::with_data(Call&& call, uint8_t success_type, OnSuccess&& on_success) {
  std::lock_guard lock(data_mutex_);
  if (agent_id_ <= 0 || stopping_) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (!data_) data_ = std::make_unique<Connection>(options_, options_.io_timeout_ms);
      read_result(call(*data_), on_success, static_cast<wire::Type>(success_type));
      return true;
    } catch (const Refused& refused) {  // the daemon answered: do not retry
      std::lock_guard error_lock(mutex_);
      error_ = std::string("daemon refused: ") + refused.what();
      return false;
    } catch (const std::exception& e) {  // stale connection after a daemon restart: one retry
      data_.reset();
      std::lock_guard error_lock(mutex_);
      error_ = std::string("daemon unreachable: ") + e.what();
    }
  }
  return false;
}

bool ControlLoop::push(const EncodedBatch& batch) {
  // i64 pushRecords(1: i64 agent_id, 2: RecordBatch batch): the answer is the committed sequence.
  return with_data(
      [&](Connection& connection) {
        wire::Writer args;
        args.i64_field(1, agent_id_);
        args.field(wire::kStruct, 2);
        args.raw(batch.bytes);
        return connection.call("pushRecords", args.bytes());
      },
      wire::kI64, [&](wire::Reader& r) { committed_sequence_ = r.i64(); });
}

bool ControlLoop::window_closed(const WindowClosed& closed) {
  // windowClosed(1: i64 agent_id, 2: WindowClosed closed)
  return with_data(
      [&](Connection& connection) {
        wire::Writer args;
        args.i64_field(1, agent_id_);
        args.field(wire::kStruct, 2);
        args.i64_field(1, closed.capture_id);
        args.i64_field(2, closed.dropped_records);
        args.i64_field(3, closed.collector_overhead_ns);
        if (!closed.error.empty()) args.str_field(4, closed.error);
        args.stop();
        return connection.call("windowClosed", args.bytes());
      },
      wire::kStruct, [](wire::Reader& r) { r.skip(wire::kStruct); });
}

}  // namespace fleetscope::agent_link
