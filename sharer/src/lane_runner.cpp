#include "lane_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fleetscope::sharer {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Decisions searched for a repeat: a period of a lane with k jobs spans a few decisions per job.
size_t search_window(size_t members) {
  return 8 * members + 16;
}
constexpr size_t kMaxDecisions = 1024;
}  // namespace

OrderKey order_key(double key, const SimJob& job, size_t index) {
  return OrderKey{key, job.submit_s, job.id, index};
}

LaneRunner::LaneRunner(const Policy& policy, double switch_cost_s, bool fast_forward,
                       HostPaging paging, bool record_steps)
    : policy_(&policy),
      switch_cost_s_(switch_cost_s),
      fast_forward_(fast_forward && !record_steps),
      paging_(paging),
      record_steps_(record_steps) {}

OrderKey LaneRunner::turn_order(const Member& member) const {
  return order_key(policy_->turn_key(member.state), *member.state.job, member.job);
}

void LaneRunner::forget_history() {
  decisions_.clear();
  snapshots_.clear();
  epoch_ = false;
}

void LaneRunner::add(size_t job, const JobState& state, double start_s, int64_t preemptions,
                     double now, double paging_s) {
  Member member;
  member.job = job;
  member.state = state;
  member.start_s = start_s;
  member.preemptions = preemptions;
  member.paging_s = paging_s;
  members_.push_back(member);
  // Salus FAIR restarts every counter when a job joins.
  for (auto& each : members_) {
    each.state.usage_reset_s = now;
    each.state.gpu_since_reset_s = 0;
    if (each.phase == Phase::kReady) each.key = turn_order(each);
  }
  clock_s_ = now;
  if (running_ < 0) start_pending_ = true;
  forget_history();
}

void LaneRunner::set_factor(double factor, double now) {
  if (factor == factor_) return;
  if (running_ >= 0) {
    // The GPU phase in flight keeps the work it has left, done at the new speed.
    Member& member = members_[static_cast<size_t>(running_)];
    const double old_end = member.phase_end_s;
    member.phase_end_s = now + (old_end - now) * factor / factor_;
    member.state.attained_s += member.phase_end_s - old_end;
    member.state.gpu_since_reset_s += member.phase_end_s - old_end;
  }
  factor_ = factor;
  forget_history();
}

void LaneRunner::advance(double until, std::vector<Finished>& finished) {
  run(until, /*stop_at_finish=*/false, std::numeric_limits<int64_t>::max(), finished);
}

double LaneRunner::advance_to_first_finish(std::vector<Finished>& finished, int64_t step_budget) {
  if (members_.empty()) return kInfinity;
  run(kInfinity, /*stop_at_finish=*/true, step_budget, finished);
  return clock_s_;
}

void LaneRunner::run(double until, bool stop_at_finish, int64_t step_budget,
                     std::vector<Finished>& finished) {
  const int64_t stop_after = stepped_ > std::numeric_limits<int64_t>::max() - step_budget
                                 ? std::numeric_limits<int64_t>::max()
                                 : stepped_ + step_budget;
  for (;;) {
    if (start_pending_ && clock_s_ < until) {
      start_pending_ = false;
      if (running_ < 0) {
        const bool any_ready = std::any_of(members_.begin(), members_.end(), [](const Member& m) {
          return m.phase == Phase::kReady;
        });
        if (any_ready) {
          if (fast_forward_) skip_ahead(until);
          start_next(clock_s_);
        }
      }
    }
    const double next = next_event_s();
    if (next == kInfinity || next > until) {
      if (until != kInfinity) clock_s_ = std::max(clock_s_, until);
      return;
    }
    clock_s_ = next;
    const bool any_finished = process_events_at(next, finished);
    start_pending_ = true;
    if (any_finished) forget_history();
    if (stop_at_finish && (any_finished || stepped_ >= stop_after)) return;
  }
}

double LaneRunner::next_event_s() const {
  double next = kInfinity;
  for (const auto& member : members_) {
    if (member.phase != Phase::kReady) next = std::min(next, member.phase_end_s);
  }
  return next;
}

bool LaneRunner::process_events_at(double time_s, std::vector<Finished>& finished) {
  bool any_finished = false;
  if (running_ >= 0 && members_[static_cast<size_t>(running_)].phase_end_s == time_s) {
    const auto index = static_cast<size_t>(running_);
    running_ = -1;
    Member& member = members_[index];
    if (member.host_s > 0) {
      member.phase = Phase::kHost;
      // Equal to time_s only by rounding: the loop below takes it.
      member.phase_end_s =
          epoch_ ? std::max(time_s, epoch_start_s_ +
                                        static_cast<double>(epoch_count_ + 1) * epoch_period_s_)
                 : time_s + member.host_s;
    } else {
      complete_iteration(index, time_s, finished, any_finished);
    }
  }
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].phase == Phase::kHost && members_[i].phase_end_s == time_s) {
      complete_iteration(i, time_s, finished, any_finished);
    }
  }
  if (any_finished) {
    const int64_t running_job =
        running_ >= 0 ? static_cast<int64_t>(members_[static_cast<size_t>(running_)].job) : -1;
    std::erase_if(members_, [](const Member& m) {
      return m.state.done_iterations >= m.state.job->iterations;
    });
    running_ = -1;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (static_cast<int64_t>(members_[i].job) == running_job) running_ = static_cast<int>(i);
    }
  }
  return any_finished;
}

void LaneRunner::complete_iteration(size_t index, double now, std::vector<Finished>& finished,
                                    bool& any_finished) {
  Member& member = members_[index];
  if (record_steps_) {
    const double from = member.last_step_end_s >= 0 ? member.last_step_end_s : member.start_s;
    ++member.step_counts[std::llround((now - from) * 1e9)];
    member.last_step_end_s = now;
  }
  member.state.done_iterations += 1;
  member.state.last_turn_end_s = now;
  if (epoch_) ++epoch_count_;
  if (member.state.done_iterations < member.state.job->iterations) {
    member.phase = Phase::kReady;
    member.key = turn_order(member);
    return;
  }
  finished.push_back(Finished{member, now});
  any_finished = true;
}

void LaneRunner::start_next(double now) {
  if (policy_->turn_key_needs_time()) {
    for (auto& member : members_) {
      if (member.phase == Phase::kReady) {
        member.key =
            order_key(policy_->turn_key_at(member.state, now), *member.state.job, member.job);
      }
    }
  }
  // Without work conservation only the first in key order may run, ready or not.
  const bool any_member = !policy_->work_conserving();
  int best = -1;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (!any_member && members_[i].phase != Phase::kReady) continue;
    if (best < 0 || members_[i].key < members_[static_cast<size_t>(best)].key) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0 || members_[static_cast<size_t>(best)].phase != Phase::kReady) return;
  Member& member = members_[static_cast<size_t>(best)];
  const SimJob& spec = *member.state.job;
  // Contention stretches the GPU phase only; the host phase (input pipeline, Python) does not
  // use the GPU.
  const double iteration = spec.iteration_time_s(member.state.done_iterations);
  double gpu_phase = iteration * factor_ * spec.utilization;
  member.host_s = iteration - iteration * spec.utilization;
  // Epochs need every iteration alike (a job with a tail has two lengths).
  const bool alone =
      members_.size() == 1 && last_job_ == static_cast<int64_t>(member.job) && spec.steady();
  if (alone && !epoch_) {
    epoch_ = true;
    epoch_start_s_ = now;
    epoch_period_s_ = gpu_phase + member.host_s;
    epoch_count_ = 0;
  } else if (!alone) {
    epoch_ = false;
  }
  if (last_job_ >= 0 && last_job_ != static_cast<int64_t>(member.job)) {
    gpu_phase += switch_cost_s_;
    // Passed over while ready: the policy preempted it at the iteration boundary.
    for (auto& other : members_) {
      if (static_cast<int64_t>(other.job) == last_job_ && other.phase == Phase::kReady) {
        ++other.preemptions;
      }
    }
  }
  if (paging_.enabled) gpu_phase += page_in(static_cast<size_t>(best));
  if (member.start_s < 0) member.start_s = now;
  member.state.attained_s += gpu_phase;
  member.state.gpu_since_reset_s += gpu_phase;
  member.phase = Phase::kRunning;
  member.phase_end_s =
      epoch_ && member.host_s <= 0
          ? epoch_start_s_ + static_cast<double>(epoch_count_ + 1) * epoch_period_s_
          : now + gpu_phase;
  running_ = best;
  last_job_ = static_cast<int64_t>(member.job);
  ++stepped_;
}

double LaneRunner::page_in(size_t index) {
  Member& member = members_[index];
  const MemoryDemand& demand = member.state.job->memory;
  const int64_t working_set = demand.persistent_bytes + demand.ephemeral_peak_bytes;
  const int64_t missing = working_set - member.resident_bytes;
  if (missing <= 0) return 0;
  int64_t resident = 0;
  for (const auto& each : members_) resident += each.resident_bytes;
  const int64_t usable =
      paging_.gpu_bytes - static_cast<int64_t>(members_.size()) * paging_.context_bytes;
  int64_t evict = std::max<int64_t>(0, resident + missing - usable);
  const int64_t moved_in = member.host_bytes;
  int64_t moved_out = 0;
  // Least recently run first (ties: lower index); the job about to run keeps its bytes.
  while (evict > 0) {
    int victim = -1;
    for (size_t i = 0; i < members_.size(); ++i) {
      if (i == index || members_[i].resident_bytes == 0) continue;
      if (victim < 0 || members_[i].state.last_turn_end_s <
                            members_[static_cast<size_t>(victim)].state.last_turn_end_s) {
        victim = static_cast<int>(i);
      }
    }
    if (victim < 0) break;  // nothing left to evict: the model charges no more
    Member& out = members_[static_cast<size_t>(victim)];
    const int64_t bytes = std::min(evict, out.resident_bytes);
    out.resident_bytes -= bytes;
    out.host_bytes += bytes;
    moved_out += bytes;
    evict -= bytes;
  }
  member.resident_bytes = working_set;
  member.host_bytes = 0;
  const double seconds = static_cast<double>(moved_in + moved_out) / paging_.link_bytes_per_s;
  member.paging_s += seconds;
  return seconds;
}

// ---- closed form ------------------------------------------------------------------------------

void LaneRunner::skip_ahead(double until) {
  // Iterations of unequal length repeat only every 100: such lanes are stepped.
  for (const auto& member : members_) {
    if (!member.state.job->steady()) return;
  }
  if (members_.size() == 1) {
    skip_alone(until);
  } else if (policy_->turn_key_kind() != Policy::TurnKeyKind::kOther) {
    skip_periods(until);
  }
}

// One job alone: iterations of (GPU phase + host phase) back to back, no switch after the first.
// Leaves the last iteration, and the last whole iteration before `until`, to be stepped.
bool LaneRunner::skip_alone(double until) {
  Member& member = members_.front();
  if (last_job_ != static_cast<int64_t>(member.job)) return false;
  const SimJob& spec = *member.state.job;
  const double gpu_phase = spec.iteration_s * factor_ * spec.utilization;
  const double host = spec.iteration_s - spec.iteration_s * spec.utilization;
  const double period = gpu_phase + host;
  int64_t skip = spec.iterations - member.state.done_iterations - 1;
  if (until != kInfinity) {
    const double fit = std::floor((until - clock_s_) / period) - 1;
    if (!(fit >= 1)) return false;
    if (fit < static_cast<double>(skip)) skip = static_cast<int64_t>(fit);
  }
  if (skip < 1) return false;
  if (!epoch_) {  // as start_next() would begin it at this decision
    epoch_ = true;
    epoch_start_s_ = clock_s_;
    epoch_period_s_ = period;
    epoch_count_ = 0;
  }
  epoch_count_ += skip;
  member.state.done_iterations += skip;
  member.state.attained_s += static_cast<double>(skip) * gpu_phase;
  member.state.gpu_since_reset_s += static_cast<double>(skip) * gpu_phase;
  clock_s_ = epoch_start_s_ + static_cast<double>(epoch_count_) * epoch_period_s_;
  member.state.last_turn_end_s = clock_s_;
  member.key = turn_order(member);
  return true;
}

// Several jobs: record the lane's state at each decision; when it repeats (shifted in time), the
// decisions between the two repeat too, so whole periods are skipped at once.
void LaneRunner::skip_periods(double until) {
  const bool time_shift = policy_->turn_key_kind() == Policy::TurnKeyKind::kTimeShift;
  const bool remaining = policy_->turn_key_kind() == Policy::TurnKeyKind::kRemaining;
  const double now = clock_s_;
  Decision current{now, last_job_, static_cast<uint64_t>(last_job_) * 0x9E3779B97F4A7C15ull,
                   snapshots_.size()};
  for (const auto& member : members_) {
    Snapshot snapshot;
    snapshot.ready = member.phase == Phase::kReady;
    if (!snapshot.ready) {
      snapshot.relative_s = member.phase_end_s - now;
    } else if (time_shift) {
      snapshot.relative_s = now - member.key.key;
    }
    snapshot.done = member.state.done_iterations;
    snapshot.attained_s = member.state.attained_s;
    snapshot.preemptions = member.preemptions;
    snapshot.resident_bytes = member.resident_bytes;
    snapshot.host_bytes = member.host_bytes;
    snapshot.paging_s = member.paging_s;
    current.signature =
        (current.signature ^ (snapshot.ready ? 0x51ull : 0x2Bull)) * 0x100000001B3ull;
    snapshots_.push_back(snapshot);
  }
  const size_t count = members_.size();
  const double tolerance = 1e-9 + 4e-15 * std::abs(now);
  const size_t window = std::min(decisions_.size(), search_window(count));
  for (size_t back = 1; back <= window; ++back) {
    const size_t index = decisions_.size() - back;
    // A copy: the SRTF check below appends to decisions_, which may move its elements.
    const Decision previous = decisions_[index];
    if (previous.signature != current.signature || previous.last_job != current.last_job) continue;
    bool same = true;
    for (size_t i = 0; i < count && same; ++i) {
      const Snapshot& a = snapshots_[previous.first + i];
      const Snapshot& b = snapshots_[current.first + i];
      // Paging decisions depend on what is resident: a period repeats only with the same.
      same = a.ready == b.ready && std::abs(a.relative_s - b.relative_s) <= tolerance &&
             a.resident_bytes == b.resident_bytes && a.host_bytes == b.host_bytes;
    }
    if (!same) continue;
    const double period = now - previous.time_s;
    if (!(period > 0)) continue;
    std::vector<int64_t> per_period(count);
    int64_t total = 0;
    int64_t periods = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < count; ++i) {
      per_period[i] = snapshots_[current.first + i].done - snapshots_[previous.first + i].done;
      total += per_period[i];
      if (per_period[i] > 0) {
        // Keep one more period and the last iteration to be stepped.
        const int64_t left = members_[i].state.job->iterations - members_[i].state.done_iterations;
        periods = std::min(periods, (left - per_period[i] - 1) / per_period[i]);
      }
    }
    if (total == 0) continue;
    if (until != kInfinity) {
      const double fit = std::floor((until - now) / period) - 1;
      if (!(fit >= 1)) break;
      if (fit < static_cast<double>(periods)) periods = static_cast<int64_t>(fit);
    }
    if (periods < 1) break;
    if (remaining) {
      // SRTF: the same jobs must win every decision of the period after the skip.
      decisions_.push_back(current);
      if (!keeps_remaining_order(index, decisions_.size(), count, 1, per_period)) {
        decisions_.pop_back();
        break;
      }
      int64_t low = 1;
      int64_t high = periods;
      while (low < high) {
        const int64_t middle = low + (high - low + 1) / 2;
        if (keeps_remaining_order(index, decisions_.size(), count, middle, per_period)) {
          low = middle;
        } else {
          high = middle - 1;
        }
      }
      decisions_.pop_back();
      periods = low;
    }
    const auto times = static_cast<double>(periods);
    for (size_t i = 0; i < count; ++i) {
      Member& member = members_[i];
      const Snapshot& a = snapshots_[previous.first + i];
      const Snapshot& b = snapshots_[current.first + i];
      member.state.done_iterations += periods * per_period[i];
      member.state.attained_s += times * (b.attained_s - a.attained_s);
      member.state.gpu_since_reset_s += times * (b.attained_s - a.attained_s);
      member.preemptions += periods * (b.preemptions - a.preemptions);
      member.paging_s += times * (b.paging_s - a.paging_s);
      if (per_period[i] > 0) member.state.last_turn_end_s += times * period;
      if (member.phase == Phase::kHost) member.phase_end_s += times * period;
      if (member.phase == Phase::kReady) member.key = turn_order(member);
    }
    clock_s_ = now + times * period;
    forget_history();
    return;
  }
  decisions_.push_back(current);
  if (decisions_.size() > kMaxDecisions) forget_history();
}

// Whether every decision in decisions_[from, to) picks the same job after `periods` more periods
// (each job i `per_period[i]` iterations further on). Remaining times are linear in the periods,
// so the order holding now and after `periods` means it holds at every period between.
bool LaneRunner::keeps_remaining_order(size_t from, size_t to, size_t member_count, int64_t periods,
                                       const std::vector<int64_t>& per_period) const {
  for (size_t d = from; d < to; ++d) {
    const size_t first = decisions_[d].first;
    int picked_now = -1;
    int picked_later = -1;
    OrderKey best_now;
    OrderKey best_later;
    for (size_t i = 0; i < member_count; ++i) {
      const Snapshot& snapshot = snapshots_[first + i];
      if (!snapshot.ready) continue;
      JobState state = members_[i].state;
      state.done_iterations = snapshot.done;
      const OrderKey now = order_key(policy_->turn_key(state), *state.job, members_[i].job);
      state.done_iterations = snapshot.done + periods * per_period[i];
      const OrderKey later = order_key(policy_->turn_key(state), *state.job, members_[i].job);
      if (picked_now < 0 || now < best_now) {
        picked_now = static_cast<int>(i);
        best_now = now;
      }
      if (picked_later < 0 || later < best_later) {
        picked_later = static_cast<int>(i);
        best_later = later;
      }
    }
    if (picked_now != picked_later) return false;
  }
  return true;
}

}  // namespace fleetscope::sharer
