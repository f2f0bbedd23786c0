#pragma once
// The job's side of the iteration gate. At each iteration boundary a member of a shared lane gives
// the turn back and waits until the arbiter grants it again; the policy decides who runs next.
//
// Cost for a job alone in its lane: after the first boundary it holds the turn and nobody else
// waits, which it sees with one atomic load of the lane's waiting mask (LaneSegment); it then
// returns without any system call. Only when another member waits does a boundary become a
// handover: `before_handover` runs (the interposition library synchronises the context and trims
// its memory pools there, so the next job finds the ephemeral memory free), then NEXT/GO.
//
// If the arbiter cannot be reached or goes away, the gate opens for good: the job runs unshared.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "fleetscope/lanes/gate_protocol.h"

namespace fleetscope::lanes {

class LaneSegment;

// A blocking connection to the arbiter.
class GateClient {
 public:
  GateClient() = default;
  ~GateClient();
  GateClient(const GateClient&) = delete;
  GateClient& operator=(const GateClient&) = delete;

  // Connects, sends HELLO and waits for WELCOME. False and `error` otherwise.
  bool connect(const std::string& socket_path, const GateHello& hello, std::string* error);
  // Sends NEXT and blocks until GO. False when the connection broke (the arbiter is gone).
  bool request_turn(uint64_t remaining_ns);
  bool release();
  void close();
  bool connected() const { return fd_ >= 0; }

 private:
  bool send_all(const std::string& text);
  bool read_line(std::string* line);

  int fd_ = -1;
  std::string buffer_;
};

struct StepGateSettings {
  std::string socket_path;  // empty: no gate
  std::string lane_id;
  int priority = 0;
  uint64_t total_steps = 0;  // 0: unknown (SRTF then ranks this job last)
};

class StepGate {
 public:
  // `segment` may be null (no waiting-mask fast path: every boundary asks the arbiter).
  StepGate(StepGateSettings settings, LaneSegment* segment, int slot,
           std::function<void()> before_handover);

  // One iteration boundary. Returns once this job holds the turn (or the gate is open).
  void boundary();
  // Gives the turn back until the next boundary (e.g. before a long evaluation phase).
  void release();
  void set_total_steps(uint64_t total_steps);

  bool open() const;            // true once the gate gave up on the arbiter (or had none)
  uint64_t boundaries() const;  // boundaries seen
  uint64_t handovers() const;   // boundaries that talked to the arbiter

 private:
  using Clock = std::chrono::steady_clock;
  bool ensure_connected_locked();
  uint64_t remaining_estimate_locked() const;
  void open_gate_locked();

  mutable std::mutex mutex_;
  StepGateSettings settings_;
  LaneSegment* segment_;
  int slot_;
  std::function<void()> before_handover_;
  GateClient client_;
  bool open_ = false;
  bool holding_ = false;
  bool tried_connect_ = false;
  uint64_t boundaries_ = 0;
  uint64_t handovers_ = 0;
  double step_ns_average_ = 0;  // exponentially weighted, time holding the turn per step
  Clock::time_point turn_start_{};
  Clock::time_point last_reclaim_{};
};

}  // namespace fleetscope::lanes
