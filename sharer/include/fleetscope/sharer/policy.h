#pragma once
// Scheduling policies for the simulator. A policy orders waiting jobs for admission and, inside a
// lane, picks the job that runs the next iteration. Every lane re-decides at each iteration
// boundary, so a policy whose key favours a newcomer preempts the running job there.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

// What a policy may look at: the job and its measured progress.
struct JobState {
  const SimJob* job = nullptr;
  int64_t done_iterations = 0;
  double attained_s = 0;        // GPU time received so far
  double last_turn_end_s = -1;  // when its last iteration ended (-1: never ran)
  // Salus FAIR's counter: reset (to this time) whenever a job joins the job's lane, then
  // GPU-phase time since.
  double usage_reset_s = 0;
  double gpu_since_reset_s = 0;

  // Remaining time from the measured iteration time and the remaining iterations.
  double remaining_s() const {
    return static_cast<double>(job->iterations - done_iterations) * job->iteration_s;
  }
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  // One job per GPU (the baseline): no lanes, no time sharing.
  virtual bool exclusive() const { return false; }
  // May a later job start when an earlier one in admission order does not fit?
  virtual bool backfill() const { return true; }
  // Place jobs on GPUs already in use before touching an empty one.
  virtual bool consolidate() const { return false; }
  // false: only the job with the lowest key may use the lane; while it is in its host phase the
  // lane idles (Salus's trace run turned work conservation off).
  virtual bool work_conserving() const { return true; }
  // > 0: a GPU takes at most this many jobs, whatever their memory (with pages_to_host).
  virtual int max_jobs_per_gpu() const { return 0; }
  // > 0: a GPU in use takes another job only while the sum of its jobs' utilization stays within
  // this (water-filling), and jobs go to the GPU with the lowest sum.
  virtual double max_gpu_demand() const { return 0; }
  // Memory beyond the GPU's is paged to host memory (Salus with its lane manager off): admission
  // counts jobs, not bytes, and every GPU is one lane.
  virtual bool pages_to_host() const { return false; }
  // The turn key of a waiting job changes with time (it is recomputed at every decision).
  virtual bool turn_key_needs_time() const { return false; }
  virtual double turn_key_at(const JobState& state, double now_s) const {
    (void)now_s;
    return turn_key(state);
  }
  // Lower keys go first; ties fall back to submit time, then job id.
  virtual double admission_key(const JobState& state) const = 0;
  virtual double turn_key(const JobState& state) const = 0;

  // How the turn key changes, which tells the simulator when a lane's schedule repeats and can be
  // advanced many iterations at once. kTimeShift: the key is a time of the job's own past (shifting
  // every time in the lane by the same amount keeps every decision). kRemaining: the key is the
  // remaining time, (iterations - done) x iteration time. kOther: neither; lanes with several jobs
  // are stepped one iteration at a time (lanes with one job are always advanced in closed form).
  // kConstant: the key never changes (decisions depend only on who is ready).
  enum class TurnKeyKind { kTimeShift, kRemaining, kConstant, kOther };
  virtual TurnKeyKind turn_key_kind() const { return TurnKeyKind::kOther; }
};

// Exclusive first-in first-out: what every cluster runs today. No backfilling.
class FifoExclusivePolicy final : public Policy {
 public:
  std::string_view name() const override { return "fifo"; }
  bool exclusive() const override { return true; }
  bool backfill() const override { return false; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
};

// Shortest remaining time first, remaining = measured iteration time x remaining iterations.
class SrtfPolicy final : public Policy {
 public:
  std::string_view name() const override { return "srtf"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
  TurnKeyKind turn_key_kind() const override { return TurnKeyKind::kRemaining; }
};

// Packing: as few GPUs as possible, arrival order, round robin inside a lane.
class PackPolicy final : public Policy {
 public:
  std::string_view name() const override { return "pack"; }
  bool consolidate() const override { return true; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
  TurnKeyKind turn_key_kind() const override { return TurnKeyKind::kTimeShift; }
};

// Salus's FAIR (SymbioticLab/Salus src/execution/scheduler/impl/fair.cpp): every job of the lane
// accumulates memory x time, its persistent memory all the time and its ephemeral memory during
// its GPU phases; the least accumulated goes next; every counter restarts at zero when a job
// joins. Admission in arrival order.
class FairPolicy final : public Policy {
 public:
  std::string_view name() const override { return "fair"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
  bool turn_key_needs_time() const override { return true; }
  double turn_key_at(const JobState& state, double now_s) const override;
};

// Least attained GPU time first (fleetscope's FAIR before it followed Salus's definition).
class FairGpuTimePolicy final : public Policy {
 public:
  std::string_view name() const override { return "fair-gputime"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
};

// Salus's trace run (benchmarks/exps/card249.py with its "preempt" scheduler,
// src/execution/scheduler/impl/preempt.cpp): at most 11 jobs per GPU admitted in arrival order
// (no backfilling), memory beyond the GPU's paged to host, the newest job runs and the others
// wait (work conservation off), one lane per GPU (lane manager off).
class SalusPreemptPolicy final : public Policy {
 public:
  static constexpr int kConcurrentJobs = 11;  // card249.py --concurrent default
  std::string_view name() const override { return "salus-preempt"; }
  bool backfill() const override { return false; }
  bool work_conserving() const override { return false; }
  int max_jobs_per_gpu() const override { return kConcurrentJobs; }
  bool pages_to_host() const override { return true; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
  TurnKeyKind turn_key_kind() const override { return TurnKeyKind::kConstant; }
};

// Highest priority first; a higher-priority job takes a lane's next turn (preemption at the
// iteration boundary), equal priorities round-robin.
class PriorityPolicy final : public Policy {
 public:
  std::string_view name() const override { return "priority"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
};

// Fluid-style hyper-parameter tuning (Fluid: Zhang et al., MLSys 2021, water-filling trial
// placement): the trials of a study are spread over the GPUs, each GPU filled with trials in
// lanes of their own until their utilizations sum to one GPU, the lowest-filled GPU first; as
// trials finish the freed share is refilled from the waiting ones, so every GPU stays near full.
// Round robin inside a lane.
class WaterFillPolicy final : public Policy {
 public:
  std::string_view name() const override { return "waterfill"; }
  double max_gpu_demand() const override { return 1.0; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
  TurnKeyKind turn_key_kind() const override { return TurnKeyKind::kTimeShift; }
};

// Throws std::invalid_argument naming the expected values for an unknown name.
std::unique_ptr<Policy> make_policy(std::string_view name);
std::vector<std::string> policy_names();

}  // namespace fleetscope::sharer
