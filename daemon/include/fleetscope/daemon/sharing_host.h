// The sharing service as the daemon hosts it: the sharer's SharingService (one lane allocator per
// GPU, plans, automatic mode) plus what it needs from the host: the iteration gate's arbiter on a
// Unix socket (turns granted by the lane's policy), the lanes' shared-memory ledgers (created by
// the daemon, so the daemon decides each lane's capacity), a thread that reclaims the lanes of
// exited processes and feeds the gate's step boundaries into the slowdown measurement, and the
// host store, where every decision becomes a sharing_events row and every plan a lane_plans row.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/daemon/host_store.h"
#include "fleetscope/lanes/gate_arbiter.h"
#include "fleetscope/lanes/gate_server.h"
#include "fleetscope/lanes/lane_segment.h"
#include "fleetscope/sharer/sharing_service.h"

namespace fleetscope::daemon {

struct SharingSnapshot {
  bool enabled = true, automatic = false;
  double max_slowdown = 0;
  std::vector<sharer::ServiceGpu> gpus;
  std::vector<int64_t> gpu_free_bytes;
  std::vector<sharer::ServiceLane> lanes;
  std::map<std::string, lanes::LaneUsage> usage;  // lane name -> its ledger's figures
  std::vector<sharer::LaneTicket> queued;
  std::vector<sharer::ServicePlan> plans;
  std::string gate_socket;
  std::map<pid_t, uint64_t> job_denials;   // job pid -> allocations its lane refused
  std::vector<std::string> stray_ledgers;  // ledger files of no lane of this daemon
};

struct AppliedPlan {
  int64_t plan_id = 0;
  std::vector<std::string> workflows;
  std::optional<int64_t> superseded;
};

class SharingHost {
 public:
  using GpuSource = std::function<std::vector<sharer::ServiceGpu>()>;
  using Clock = std::function<int64_t()>;

  // `memory`: the host's memory model (the CUDA context from fleetscoped's cuda_context_mib).
  // `single_lane`: jobs placed without a plan share one lane per GPU (single_lane_per_gpu).
  SharingHost(HostStore& store, GpuSource gpus, Clock clock, std::ostream& log,
              sharer::MemoryModel memory = {}, bool single_lane = false);
  ~SharingHost();  // stop()
  SharingHost(const SharingHost&) = delete;
  SharingHost& operator=(const SharingHost&) = delete;

  // Serves the iteration gate on `gate_socket` and starts the thread that calls poll() every
  // `period_ms`. Lane ledgers go to `ledger_directory` (/dev/shm by default). Throws
  // std::runtime_error when the socket cannot be served. Without start() lanes are still granted
  // (memory caps only; the tickets name no gate) and poll() must be called by the owner.
  // The sharing state of the daemon's previous run (the plan active when it stopped, automatic
  // mode, sharing off) is taken back from lane_plans and sharing_events here, or at first use
  // without start().
  void start(const std::string& gate_socket, const std::string& ledger_directory, int period_ms);
  void stop();
  void set_ledger_directory(const std::string& directory);

  // Throws std::invalid_argument for a request the service refuses outright.
  sharer::LaneTicket request(sharer::LaneAsk ask);
  // Waits up to `timeout` for a queued request to leave the queue; nullopt if unknown.
  std::optional<sharer::LaneTicket> await(int64_t request_id, std::chrono::milliseconds timeout);
  bool release(pid_t pid);
  // Parses the plan (std::runtime_error naming `source` on bad JSON), stores it in lane_plans and
  // makes it the active plan. `policy`: its lanes' turn policy; empty: the one the plan was made
  // for (its turn_policy, fifo without one); another one is refused (std::invalid_argument).
  AppliedPlan apply_plan(const std::string& plan_json, const std::string& source, bool automatic,
                         double max_slowdown, const std::string& policy);
  void off();
  void on();
  // The grant token of a lane (written into its ledger when the daemon made it); nullopt when the
  // lane has no ledger.
  std::optional<std::string> lane_token(const std::string& lane_name);
  // Lane ledger files in the ledger directory that no lane of this daemon owns (left by a
  // crashed run, or made by a job that named its own lane): removed, and their paths answered.
  std::vector<std::string> remove_stray_ledgers();
  // Allocations refused by lanes since the daemon started, by (workflow, GPU index): the
  // fleetscope_lane_denied_allocations_total counter.
  std::map<std::pair<std::string, int>, uint64_t> denied_totals();
  void set_automatic(bool on, double max_slowdown);
  SharingSnapshot snapshot();
  // The uid a lane's jobs were granted to (for the gate's admission); nullopt for unknown lanes.
  std::vector<uid_t> lane_uids(const std::string& lane_name);

  // One period: lanes of exited processes reclaimed, step boundaries measured, automatic mode's
  // verdict, records written. Called by the thread, or by tests.
  void poll();

  const std::string& gate_socket() const { return gate_socket_; }
  std::string ledger_directory() {
    std::lock_guard lock(mutex_);
    return ledger_directory_;
  }

 private:
  sharer::SharingService& service_locked();
  // Takes back the sharing state of the daemon's previous run from the host store.
  void resume_locked();
  void after_change_locked();  // ledgers + records, then wakes waiters
  void feed_boundaries_locked();
  std::optional<pid_t> job_pid_of_locked(pid_t member_pid);
  std::vector<uid_t> lane_uids_locked(const std::string& lane_name) const;

  HostStore& store_;
  GpuSource gpu_source_;
  Clock clock_;
  std::ostream& log_;
  sharer::MemoryModel memory_;
  std::string gate_socket_;
  std::string ledger_directory_ = "/dev/shm";
  std::string lane_prefix_;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool single_lane_ = false;
  std::unique_ptr<sharer::SharingService> service_;  // created at first use (the GPUs known)
  lanes::GateArbiter arbiter_;
  std::unique_ptr<lanes::GateServer> gate_;
  std::map<std::string, std::unique_ptr<lanes::LaneSegment>> ledgers_;
  std::map<std::string, std::string> lane_tokens_;  // lane name -> its grant token
  std::map<pid_t, pid_t> member_job_;  // gate member pid -> pid of the job holding the lane
  struct MemberSteps {
    uint64_t steps = 0, last_step_ns = 0, denied = 0;
  };
  void count_denials_locked(const std::string& lane, pid_t member_pid, uint64_t fresh,
                            uint64_t member_total);
  std::vector<std::string> stray_ledgers_locked() const;
  std::map<pid_t, uint64_t> job_denials_;
  std::map<std::pair<std::string, int>, uint64_t> denied_totals_;
  std::vector<HostStore::SharingEventRow> pending_events_;  // written by after_change_locked
  // Ledger members (pid, start ticks) -> their step counter at the last poll.
  std::map<std::pair<pid_t, uint64_t>, MemberSteps> member_steps_;
  uint64_t last_event_ = 0;

  std::mutex thread_mutex_;
  std::condition_variable thread_wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// The one mapping between the sharing service's records and the sharing_events rows (the
// table's generated struct, schema/tables.py), both ways. The sharer stays free of the store; a
// column added to the table, or a member to SharingRecord, fails to compile here until it is
// mapped.
HostStore::SharingEventRow sharing_event_row(sharer::SharingRecord record);
sharer::SharingRecord sharing_record(HostStore::SharingEventRow row);

// The ancestors of `pid` from /proc (parent first), at most `depth` of them.
std::vector<pid_t> ancestors_of(pid_t pid, int depth, const std::string& proc_root = "/proc");
// The real uid of a process from /proc/PID/status; nullopt when it is gone.
std::optional<uid_t> uid_of_process(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace fleetscope::daemon
