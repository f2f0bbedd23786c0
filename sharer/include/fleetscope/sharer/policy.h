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
  // Lower keys go first; ties fall back to submit time, then job id.
  virtual double admission_key(const JobState& state) const = 0;
  virtual double turn_key(const JobState& state) const = 0;

  // How the turn key changes, which tells the simulator when a lane's schedule repeats and can be
  // advanced many iterations at once. kTimeShift: the key is a time of the job's own past (shifting
  // every time in the lane by the same amount keeps every decision). kRemaining: the key is the
  // remaining time, (iterations - done) x iteration time. kOther: neither; lanes with several jobs
  // are stepped one iteration at a time (lanes with one job are always advanced in closed form).
  enum class TurnKeyKind { kTimeShift, kRemaining, kOther };
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

// Least attained service first.
class FairPolicy final : public Policy {
 public:
  std::string_view name() const override { return "fair"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
};

// Highest priority first; a higher-priority job takes a lane's next turn (preemption at the
// iteration boundary), equal priorities round-robin.
class PriorityPolicy final : public Policy {
 public:
  std::string_view name() const override { return "priority"; }
  double admission_key(const JobState& state) const override;
  double turn_key(const JobState& state) const override;
};

// Throws std::invalid_argument naming the expected values for an unknown name.
std::unique_ptr<Policy> make_policy(std::string_view name);
std::vector<std::string> policy_names();

}  // namespace fleetscope::sharer
