// The Thrift pieces that apply ConnectionLimiter (connection_guard.h) to the daemon's listeners:
// a server socket that admits each accepted connection (or refuses it) and never dies of a failed
// accept(2) (EMFILE, ENFILE, ENOBUFS: it backs off and tries again), and a framed transport that
// reads a frame within the request deadline, against the read budget, growing its buffer with the
// bytes that actually arrived (a declared size costs nothing until it is sent).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include "fleetscope/daemon/connection_guard.h"

namespace fleetscope::daemon {

// Reads frames of at most `max_frame_bytes`. Waiting for a request's first byte is bounded by
// `idle_timeout_ms` (an idle connection is closed then); from that byte on the whole frame must
// arrive within the limiter's request deadline, whatever the pace of the bytes.
class GuardedFramedTransport : public apache::thrift::transport::TFramedTransport {
 public:
  GuardedFramedTransport(std::shared_ptr<apache::thrift::transport::TTransport> inner,
                         std::shared_ptr<apache::thrift::TConfiguration> config,
                         std::shared_ptr<ConnectionTicket> ticket, uint32_t max_frame_bytes,
                         int idle_timeout_ms, std::chrono::milliseconds request_deadline);
  ~GuardedFramedTransport() override;

  uint32_t readEnd() override;
  void close() override;

 protected:
  bool readFrame() override;

 private:
  // The receive timeout left before `deadline_`; throws TIMED_OUT when none is.
  void arm_deadline();
  uint32_t read_some(uint8_t* into, uint32_t wanted);

  std::shared_ptr<apache::thrift::transport::TSocket> socket_;  // null: no timeouts to set
  std::shared_ptr<ConnectionTicket> ticket_;
  uint32_t max_frame_bytes_;
  int idle_timeout_ms_;
  std::chrono::milliseconds request_deadline_;
  std::chrono::steady_clock::time_point deadline_{};
};

// Hands the transport factory the ticket of the connection the server socket accepted last.
class TicketSource {
 public:
  virtual ~TicketSource() = default;
  // The ticket of `client`, once (nullptr after, or for another transport).
  virtual std::shared_ptr<ConnectionTicket> take_ticket(
      const apache::thrift::transport::TTransport* client) = 0;
};

// The transports of one listener: Thrift's server loop asks for the input transport of a new
// connection first (a GuardedFramedTransport holding the ticket), then for its output transport
// (a plain framed one: it only writes).
class GuardedFramedFactory : public apache::thrift::transport::TTransportFactory {
 public:
  GuardedFramedFactory(std::shared_ptr<apache::thrift::TConfiguration> config,
                       std::shared_ptr<TicketSource> tickets, uint32_t max_frame_bytes,
                       int idle_timeout_ms, std::chrono::milliseconds request_deadline)
      : config_(std::move(config)),
        tickets_(std::move(tickets)),
        max_frame_bytes_(max_frame_bytes),
        idle_timeout_ms_(idle_timeout_ms),
        request_deadline_(request_deadline) {}
  std::shared_ptr<apache::thrift::transport::TTransport> getTransport(
      std::shared_ptr<apache::thrift::transport::TTransport> inner) override {
    if (auto ticket = tickets_->take_ticket(inner.get()))
      return std::make_shared<GuardedFramedTransport>(
          inner, config_, std::move(ticket), max_frame_bytes_, idle_timeout_ms_, request_deadline_);
    return std::make_shared<apache::thrift::transport::TFramedTransport>(inner, config_);
  }

 private:
  std::shared_ptr<apache::thrift::TConfiguration> config_;
  std::shared_ptr<TicketSource> tickets_;
  uint32_t max_frame_bytes_;
  int idle_timeout_ms_;
  std::chrono::milliseconds request_deadline_;
};

// What an admitting socket needs to know about the connections it accepts.
struct Admission {
  std::shared_ptr<ConnectionLimiter> limiter;
  std::string listener;  // for log lines: "the API on /run/fleetscope/fleetscoped.sock"
  // The uid of the peer of an accepted socket; nullopt when it cannot be told.
  std::function<std::optional<uid_t>(int fd)> uid_of;
};

// Admission control and accept(2) errors for any TServerSocket (plain, or Thrift's TLS socket).
// Base::acceptImpl throws TTransportException UNKNOWN for a failed accept(2); Thrift's server loop
// ends on that ("TServerTransport died"), so it becomes TIMED_OUT (the loop goes on) after a
// back-off of 10 ms doubling to 1 s, cut short by interrupt().
template <class Base>
class AdmittingServerSocket : public Base, public TicketSource {
 public:
  template <class... Args>
  explicit AdmittingServerSocket(Admission admission, Args&&... args)
      : Base(std::forward<Args>(args)...), admission_(std::move(admission)) {}

  void interrupt() override {
    {
      std::lock_guard lock(mutex_);
      interrupted_ = true;
    }
    wake_.notify_all();
    Base::interrupt();
  }

  // The ticket of the connection accepted last (the transport factory takes it, once).
  std::shared_ptr<ConnectionTicket> take_ticket(
      const apache::thrift::transport::TTransport* client) override {
    std::lock_guard lock(mutex_);
    if (client != pending_client_) return nullptr;
    pending_client_ = nullptr;
    return std::move(pending_ticket_);
  }

 protected:
  std::shared_ptr<apache::thrift::transport::TTransport> acceptImpl() override {
    using apache::thrift::transport::TTransportException;
    std::shared_ptr<apache::thrift::transport::TTransport> client;
    try {
      client = Base::acceptImpl();
      backoff_ms_ = 0;
    } catch (const TTransportException& e) {
      if (e.getType() != TTransportException::UNKNOWN) throw;
      back_off(e.what());
      throw TTransportException(TTransportException::TIMED_OUT, "accept() backed off");
    }
    auto socket = std::dynamic_pointer_cast<apache::thrift::transport::TSocket>(client);
    const int fd = socket ? socket->getSocketFD() : -1;
    const uid_t uid = admission_.uid_of ? admission_.uid_of(fd).value_or(static_cast<uid_t>(-1))
                                        : static_cast<uid_t>(-1);
    std::string why;
    // Over a limit the connection waits for a place in its own thread (GuardedFramedTransport);
    // refused here only when even waiting connections are at their bound.
    auto ticket = admission_.limiter->admit_or_queue(uid, fd, &why);
    if (!ticket) {
      note_refusal(uid, why);
      client->close();
      throw TTransportException(TTransportException::CLIENT_DISCONNECT, "refused: " + why);
    }
    // A client that never reads its replies cannot hold a thread for longer than a request.
    if (socket)
      socket->setSendTimeout(
          static_cast<int>(admission_.limiter->limits().request_deadline.count()));
    std::lock_guard lock(mutex_);
    pending_client_ = client.get();
    pending_ticket_ = std::move(ticket);
    return client;
  }

 private:
  void back_off(const std::string& why) {
    backoff_ms_ = backoff_ms_ == 0 ? 10 : std::min(backoff_ms_ * 2, 1000);
    if (backoff_ms_ == 10 || backoff_ms_ == 1000)
      std::fprintf(stderr, "fleetscoped: %s: %s; accepting again in %d ms\n",
                   admission_.listener.c_str(), why.c_str(), backoff_ms_);
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, std::chrono::milliseconds(backoff_ms_), [&] { return interrupted_; });
  }
  void note_refusal(uid_t uid, const std::string& why) {
    // One line per burst: the first refusal, then one a minute.
    auto now = std::chrono::steady_clock::now();
    if (now - last_refusal_note_ < std::chrono::minutes(1)) return;
    last_refusal_note_ = now;
    std::fprintf(stderr, "fleetscoped: %s: refused a connection of uid %d: %s\n",
                 admission_.listener.c_str(), static_cast<int>(uid), why.c_str());
  }

  Admission admission_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool interrupted_ = false;
  int backoff_ms_ = 0;
  std::chrono::steady_clock::time_point last_refusal_note_{};
  const apache::thrift::transport::TTransport* pending_client_ = nullptr;
  std::shared_ptr<ConnectionTicket> pending_ticket_;
};

}  // namespace fleetscope::daemon
