#pragma once
// Consolidation planner: given jobs spread over a fleet (one or more per GPU), decide which jobs
// share which GPU and lane so that as many GPUs as possible are freed, without ever violating the
// lane safety condition, without putting a latency/priority job behind a batch job (such jobs get
// a lane of their own), and keeping every job's predicted slowdown within its bound.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/job_profile.h"
#include "fleetscope/sharer/memory_model.h"
#include "fleetscope/sharer/turn_model.h"

namespace fleetscope::sharer {

struct PlannerOptions {
  double max_slowdown = 1.2;  // plan-wide bound; a job's "max_slowdown" label overrides it
  MemoryModel memory;         // P, T, margin, the CUDA context per job, the lane shape
  InterferenceModel interference;
  // Salus's own mode: one lane per GPU, every job of the GPU time-slices it (for jobs that accept
  // time slicing; a latency/priority job then keeps a GPU to itself).
  bool single_lane = false;
  // Bound each job's predicted p99 step time as well as its mean slowdown (latency jobs with a
  // p99_target_ms may then share a lane). false: the mean only, and every latency-sensitive job
  // keeps its own lane (the planner before issue 25; the cost benchmark's reference).
  bool tail_checks = true;
  // The turn policy the plan's lanes will run (`share apply` hands it to the lanes' arbiter): it
  // orders each shared lane's members, so it decides who waits how long (turn_model.h). fifo is
  // the round robin the planner always assumed.
  TurnOrder turn_order = TurnOrder::kFifo;
};

struct PlannedJob {
  std::string job_id;
  std::string workflow;
  std::string from_gpu;
  std::string to_gpu;  // empty when the job could not be placed (see `reason`)
  int lane_id = -1;
  bool moved = false;
  double predicted_slowdown = 1.0;   // expected (what the simulator's replay is compared with)
  double worst_case_slowdown = 1.0;  // the bound checked against max_slowdown
  double max_slowdown = 1.2;
  std::string reason;
  // The job's measured figures, carried into the plan JSON so that the daemon's sharing service
  // can size a planned lane for a restarted job and compare its measured iteration time.
  int64_t persistent_bytes = 0;
  int64_t ephemeral_peak_bytes = 0;
  int64_t solo_iteration_ns = 0;
  std::string memory_evidence;  // where P and T come from (JobProfile::memory_evidence)
  // The tail (issue 25): the predicted p99 step time on the planned GPU (worst case, every lane
  // mate at its p99), its bound (the job's p99_target_ms label, else its slowdown bound times
  // its p99 alone), the p99 alone, and whether the job keeps a lane to itself (latency-sensitive
  // without a p99 target).
  double predicted_p99_s = 0;
  double p99_bound_s = 0;
  double solo_p99_s = 0;
  bool own_lane = false;
};

struct PlannedLane {
  int lane_id = -1;
  int64_t offset_bytes = 0;
  int64_t capacity_bytes = 0;
  bool solo = false;
  std::vector<std::string> job_ids;
};

struct PlannedGpu {
  std::string gpu;
  int64_t capacity_bytes = 0;
  int64_t free_bytes = 0;  // after the lanes and the jobs' contexts
  std::vector<PlannedLane> lanes;
};

struct ConsolidationPlan {
  int64_t context_bytes = 0;                // the memory model's CUDA context per job
  bool single_lane = false;                 // planned with one lane per GPU
  TurnOrder turn_order = TurnOrder::kFifo;  // the lanes' turn policy its slowdowns assume
  std::vector<PlannedGpu> gpus;             // GPUs that keep jobs
  std::vector<std::string> gpus_freed;      // GPUs left without jobs
  std::vector<PlannedJob> jobs;             // in input order
  int gpus_before = 0;
  int gpus_after = 0;
};

ConsolidationPlan plan_consolidation(const std::vector<JobProfile>& jobs,
                                     const PlannerOptions& options = {});

// Replays a plan in the simulator: every placed job on its planned GPU and lane, all starting
// together, taking turns inside lanes by the plan's turn policy (fifo: round robin, the
// simulator's pack policy; srtf: SrtfPolicy, each job's remaining iterations its steps label
// plus the horizon, a job without one after all; priority: PriorityPolicy with each job's
// priority label), the same
// interference model, run for `cycles` times the longest predicted iteration. Returns, per placed
// job, the planner's predicted slowdown and the simulated one (time per iteration over the
// iteration time alone). The horizon shrinks (to no less than two of the longest iterations) when
// it would take more than 2e5 simulated iterations; a plan whose iteration times span more than
// about 1e5x cannot be replayed that way and throws std::invalid_argument.
struct ReplayedJob {
  std::string job_id;
  double predicted_slowdown = 1;
  double simulated_slowdown = 1;
  // The plan's p99 step-time bound for the job (PlannedJob::predicted_p99_s: every lane mate at
  // its p99 at once) and the p99 of the job's steps in the replay, each job's iterations taking
  // its p99 alone 2 times in 100 (SimJob::iteration_p99_s). 0 when the plan has no tail checks.
  double predicted_p99_s = 0;
  double simulated_p99_s = 0;
};
std::vector<ReplayedJob> replay_plan(const std::vector<JobProfile>& jobs,
                                     const ConsolidationPlan& plan, const PlannerOptions& options,
                                     double cycles = 400);

// The plan as JSON; a plan for a turn policy other than fifo says which ("turn_policy"), so that
// `share apply` hands its lanes the policy its slowdowns were predicted for (plan_turn_order).
nlohmann::json plan_to_json(const ConsolidationPlan& plan);
// The turn policy a plan document (plan_to_json's) was made for: its "turn_policy", fifo when it
// has none. Throws std::runtime_error naming `source` for a value that is not a policy name.
TurnOrder plan_turn_order(const nlohmann::json& plan, const std::string& source);
// The plan as an aligned table; job and GPU names longer than their column are cut in the middle
// unless `wide`.
void write_plan_table(const ConsolidationPlan& plan, std::ostream& out, bool wide = false);

}  // namespace fleetscope::sharer
