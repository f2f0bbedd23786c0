// The agent's side of the agent link (schema/fleetscope.thrift, service FleetscopeAgentLink,
// spoken with the hand-written binary-protocol codec of wire.h over framed Unix-socket
// connections): a control loop that registers with the daemon, long-polls for window orders and
// reconnects whenever the daemon restarts, plus a data connection on which flushed record batches
// stream to the daemon. Nothing here ever blocks the job's threads: the control loop has its own
// thread, and push() is called from the agent's flush path, which fails fast (and the caller counts
// the drop) when the daemon is unreachable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "fleetscope/agent_link/batch_builder.h"
#include "fleetscope/agent_link/process_facts.h"

namespace fleetscope::agent_link {

// Default agent socket of the daemon; FLEETSCOPE_AGENT_SOCKET overrides it in the agent.
inline constexpr const char* kDefaultAgentSocket = "/run/fleetscope/agent.sock";

// A window order from the daemon (AgentOrder in the IDL).
struct Order {
  enum Kind { nothing = 0, open_window = 1, close_window = 2 } kind = nothing;
  int64_t capture_id = 0;
  std::optional<int32_t> duration_ms;
  std::optional<int32_t> iterations;
};

// The end of a window as the daemon is told (WindowClosed in the IDL).
struct WindowClosed {
  int64_t capture_id = 0;
  int64_t dropped_records = 0;
  int64_t collector_overhead_ns = 0;
  std::string error;  // empty: the window was traced
};

// The daemon answered with one of its declared exceptions (InvalidRequest).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LinkOptions {
  std::string socket_path = kDefaultAgentSocket;
  int32_t max_frame_bytes = 16 * 1024 * 1024;  // replies larger than this are refused
  int poll_timeout_ms = 1000;                  // how long one awaitOrder waits in the daemon
  int reconnect_ms = 1000;                     // pause between attempts while the daemon is away
  int io_timeout_ms = 5000;                    // connect/send, and receive beyond the poll timeout
};

class Connection;  // one framed Thrift connection (link_client.cpp)

class ControlLoop {
 public:
  struct Callbacks {
    // Called on the control thread for OPEN_WINDOW and CLOSE_WINDOW orders.
    std::function<void(const Order&)> on_order;
    // Called on the control thread after each (re)registration with the new agent id.
    std::function<void(int64_t agent_id)> on_registered;
    // Called on the control thread when the daemon connection is lost.
    std::function<void()> on_disconnected;
  };

  ControlLoop(LinkOptions options, ProcessFacts facts, Callbacks callbacks);
  ~ControlLoop();  // stop()
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  void start();
  void stop();  // interrupts a pending poll; returns promptly
  bool registered() const { return agent_id_.load() > 0; }
  int64_t agent_id() const { return agent_id_.load(); }
  int64_t registrations() const { return registrations_.load(); }
  // The largest batch the daemon accepts (its welcome says; a safe default before that).
  int32_t max_batch_rows() const { return max_batch_rows_.load(); }

  // Thread-safe. Sends a batch and returns once the daemon has taken it (decoded and queued for
  // its database: a few batches per agent may wait uncommitted, and the daemon commits them even
  // if this process dies); false when the daemon is unreachable or refuses it (the caller counts
  // the rows as dropped). committed_sequence() is then the highest sequence of the window the
  // daemon reported committed (-1: none yet).
  bool push(const EncodedBatch& batch);
  int64_t committed_sequence() const { return committed_sequence_.load(); }
  // Returns true once the daemon has committed every batch of the window and recorded its end.
  bool window_closed(const WindowClosed& closed);
  std::string last_error() const;

 private:
  void run();
  bool ensure_control();
  template <class Call, class OnSuccess>
  bool with_data(Call&& call, uint8_t success_type, OnSuccess&& on_success);

  LinkOptions options_;
  ProcessFacts facts_;
  Callbacks callbacks_;
  std::atomic<int64_t> agent_id_{0};
  std::atomic<int64_t> registrations_{0};
  std::atomic<int32_t> max_batch_rows_{4096};
  std::atomic<int64_t> committed_sequence_{-1};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mutex_;  // guards control_ (for stop()), error_, and the wait below
  std::condition_variable wake_;
  std::unique_ptr<Connection> control_;
  std::mutex data_mutex_;
  std::unique_ptr<Connection> data_;
  std::string error_;
};

}  // namespace fleetscope::agent_link
