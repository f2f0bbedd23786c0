#pragma once
// The iterations of one lane (or one gang job) of the simulator, run on their own between the
// moments something outside the lane changes it: a job joins, the lane's speed changes (its GPU's
// other lanes changed), or the cluster looks at it. Salus's semantics: the lane runs one
// iteration's GPU phase at a time, a job's host phase does not hold the lane, and at every
// iteration boundary the policy picks the ready job with the lowest turn key (switching jobs
// costs the switch time).
//
// Why a lane can skip ahead: nothing outside a lane sees its iterations, only its jobs' finishes,
// so the simulator asks each lane for its next finish and leaves it alone until then. The lane
// reaches that time in closed form where its schedule repeats: a lane with one job runs n
// iterations of (GPU phase + host phase) back to back; a lane with several jobs under a policy
// whose decisions survive a time shift (round robin) or depend only on the order of remaining
// times (SRTF) is stepped until its state at a decision point repeats (same jobs ready, same host
// phases outstanding, relative to the decision time) and then jumps whole periods, as long as no
// job would finish and, under SRTF, no two jobs' remaining times would change order. Any other
// lane (FAIR's attained-service order, several priorities) is stepped one iteration at a time,
// which stays cheap because a lane's step touches only its own jobs. `fast_forward = false` steps
// every lane: the reference the equivalence tests compare against.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

// Order of waiting jobs (admission) and of a lane's ready jobs (turns): the policy's key, then
// submit time, then job id.
struct OrderKey {
  double key = 0;
  double submit_s = 0;
  int64_t id = 0;
  size_t job = 0;
  bool operator<(const OrderKey& other) const {
    if (key != other.key) return key < other.key;
    if (submit_s != other.submit_s) return submit_s < other.submit_s;
    if (id != other.id) return id < other.id;
    return job < other.job;
  }
};

OrderKey order_key(double key, const SimJob& job, size_t index);

// Paging to host (a policy with pages_to_host: Salus with its lane manager off, whose execution
// engine pages a session's memory out to host when no operation can get memory,
// ExecutionEngine::doPaging in SymbioticLab/Salus src/execution/executionengine.cpp). The lane is
// the whole GPU. Each job's working set (P + T) must be on the GPU while it runs; a job that
// starts its GPU phase with bytes on the host brings them in, and when the GPU's memory less the
// jobs' CUDA contexts cannot hold them, the least recently run jobs' bytes go out first. Every
// byte moved costs 1 / link_bytes_per_s of the GPU phase (out, then in: the evicted bytes must
// leave before the incoming ones have room). A job's first allocation is not a transfer.
struct HostPaging {
  bool enabled = false;
  int64_t gpu_bytes = 0;      // the GPU's memory
  int64_t context_bytes = 0;  // per job, never paged
  double link_bytes_per_s = 0;
};

class LaneRunner {
 public:
  enum class Phase : uint8_t { kReady, kRunning, kHost };
  struct Member {
    size_t job = 0;
    JobState state;  // state.job points at the job's SimJob
    Phase phase = Phase::kReady;
    double phase_end_s = 0;  // when the running GPU phase or the host phase ends
    double host_s = 0;       // host phase of the iteration in flight
    OrderKey key;            // turn key while ready
    int64_t preemptions = 0;
    double start_s = -1;         // first iteration's start
    int64_t resident_bytes = 0;  // of its working set on the GPU (paging)
    int64_t host_bytes = 0;      // of its working set paged out to the host
    double paging_s = 0;         // time its GPU phases spent moving pages
    // Step times (ns, completion to completion) and how often each occurred, when recorded.
    std::map<int64_t, int64_t> step_counts;
    double last_step_end_s = -1;
  };
  struct Finished {
    Member member;
    double time_s = 0;
  };

  // record_steps: every member's step times go to Member::step_counts (no closed form then).
  LaneRunner(const Policy& policy, double switch_cost_s, bool fast_forward, HostPaging paging = {},
             bool record_steps = false);

  bool empty() const { return members_.empty(); }
  double clock_s() const { return clock_s_; }
  double factor() const { return factor_; }
  const std::vector<Member>& members() const { return members_; }
  // Iterations simulated one by one (not skipped in closed form): the lane's cost.
  int64_t stepped_iterations() const { return stepped_; }

  // The job joins at `now` (the lane's clock) ready for its next iteration.
  void add(size_t job, const JobState& state, double start_s, int64_t preemptions, double now,
           double paging_s = 0);
  // From `now` (the lane's clock) on, GPU phases take `factor` times their time alone; the GPU
  // phase in flight finishes its remaining work at the new speed.
  void set_factor(double factor, double now);
  // Runs every event of the lane up to and including `until`; the choice of the next job at
  // `until` waits (a job may still join then). Members that finish are moved to `finished`.
  void advance(double until, std::vector<Finished>& finished);
  // Runs until some member finishes (every event at that time included), or until it stepped
  // `step_budget` iterations (after every event at some time), and returns that time; infinity
  // for an empty lane.
  double advance_to_first_finish(std::vector<Finished>& finished, int64_t step_budget);

 private:
  struct Snapshot {
    bool ready = false;
    double relative_s = 0;  // host phase: end - decision time; ready (time-shift keys): time - key
    int64_t done = 0;
    double attained_s = 0;
    int64_t preemptions = 0;
    int64_t resident_bytes = 0;
    int64_t host_bytes = 0;
    double paging_s = 0;
  };
  struct Decision {
    double time_s = 0;
    int64_t last_job = -1;
    uint64_t signature = 0;
    size_t first = 0;  // its snapshots in snapshots_[first, first + members)
  };

  void run(double until, bool stop_at_finish, int64_t step_budget, std::vector<Finished>& finished);
  double next_event_s() const;
  bool process_events_at(double time_s, std::vector<Finished>& finished);
  void complete_iteration(size_t index, double now, std::vector<Finished>& finished,
                          bool& any_finished);
  void start_next(double now);
  void skip_ahead(double until);
  bool skip_alone(double until);
  void skip_periods(double until);
  bool keeps_remaining_order(size_t from, size_t to, size_t member_count, int64_t periods,
                             const std::vector<int64_t>& per_period) const;
  void forget_history();
  OrderKey turn_order(const Member& member) const;
  // Pages the member's working set in (and others' out) before its GPU phase; the time it takes.
  double page_in(size_t index);

  const Policy* policy_;
  double switch_cost_s_;
  bool fast_forward_;
  HostPaging paging_;
  bool record_steps_ = false;
  double factor_ = 1.0;
  double clock_s_ = 0;
  bool start_pending_ = false;
  int running_ = -1;  // member index of the job in its GPU phase
  int64_t last_job_ = -1;
  int64_t stepped_ = 0;
  // A job alone in the lane, after its first iteration: its k-th iteration since the epoch began
  // ends at epoch_start_s_ + k * epoch_period_s_, whether stepped or skipped, so both ways compute
  // every time with the same arithmetic (sums of iterations would differ in the last bits and
  // could reorder two nearly simultaneous events).
  bool epoch_ = false;
  double epoch_start_s_ = 0;
  double epoch_period_s_ = 0;
  int64_t epoch_count_ = 0;
  std::vector<Member> members_;
  std::vector<Decision> decisions_;
  std::vector<Snapshot> snapshots_;
};

}  // namespace fleetscope::sharer
