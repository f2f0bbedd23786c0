#include "fleetscope/sharer/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "fleetscope/common/text_table.h"
#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"

namespace fleetscope::sharer {

namespace {

struct OpenGpu {
  std::string name;
  LaneAllocator allocator;
};

double bound_of(const JobProfile& job, const PlannerOptions& options) {
  auto label = job.labels.find("max_slowdown");
  if (label != job.labels.end()) {
    try {
      const double bound = std::stod(label->second);
      if (std::isfinite(bound) && bound >= 1.0) return bound;
    } catch (const std::exception&) {
      // An unreadable label falls back to the plan-wide bound.
    }
  }
  return options.max_slowdown;
}

double iteration_s(const JobProfile& job) {
  // Jobs without a measured iteration time count as one unit so lane shares stay defined.
  return job.iteration_ns > 0 ? static_cast<double>(job.iteration_ns) * 1e-9 : 1.0;
}

// The job's p99 iteration time alone; without a measured tail its typical iteration.
double p99_iteration_s(const JobProfile& job) {
  const double p99 =
      job.iteration_p99_ns > 0 ? static_cast<double>(job.iteration_p99_ns) * 1e-9 : 0;
  return std::max(p99, iteration_s(job));
}

// A stated latency target for the job's p99 step time (label p99_target_ms, finite, > 0).
std::optional<double> p99_target_s(const JobProfile& job) {
  auto label = job.labels.find("p99_target_ms");
  if (label == job.labels.end()) return std::nullopt;
  try {
    const double ms = std::stod(label->second);
    if (std::isfinite(ms) && ms > 0) return ms * 1e-3;
  } catch (const std::exception&) {
    // An unreadable target is no target (the job then keeps a lane of its own when latency-bound).
  }
  return std::nullopt;
}

// The bound on the job's predicted p99 step time: its stated target, else its slowdown bound
// applied to its own p99 alone (the tail may stretch no more than the mean).
double p99_bound_s(const JobProfile& job, double bound) {
  return p99_target_s(job).value_or(bound * p99_iteration_s(job));
}

// Latency-sensitive jobs get a lane of their own unless they state a p99 target the planner can
// check (Herald/Orloj direction: share only within the latency objective).
// Without tail checks (PlannerOptions::tail_checks false) a target cannot be checked, so every
// latency-sensitive job keeps its own lane.
bool needs_own_lane(const JobProfile& job, bool tail_checks) {
  return job.latency_sensitive() && (!tail_checks || !p99_target_s(job));
}

std::string workload_of(const JobProfile& job) {
  auto label = job.labels.find("workload");
  return label == job.labels.end() ? std::string() : label->second;
}

// Each lane's demand (its jobs' utilization, capped at one GPU) and its jobs' workloads: what
// InterferenceModel::lane_factor takes.
void lane_inputs(const LaneAllocator& allocator, const std::vector<JobProfile>& jobs,
                 std::vector<double>& lane_demand,
                 std::vector<std::vector<std::string>>& lane_workloads) {
  for (const auto& lane : allocator.lanes()) {
    double demand = 0;
    lane_workloads.emplace_back();
    for (const auto& member : lane.jobs) {
      demand += jobs[member.job_id].utilization;
      lane_workloads.back().push_back(workload_of(jobs[member.job_id]));
    }
    lane_demand.push_back(std::min(1.0, demand));
  }
}

struct JobPrediction {
  double slowdown = 1;  // worst case, or the estimate
  double p99_s = 0;     // predicted p99 step time (worst case, each job at its p99)
};

// Slowdown (worst case, or the estimate) and predicted p99 step time of every job (by index into
// `jobs`) placed on one GPU. A lane's GPU phases are stretched by the contention of its worst
// member: each job's term is the measured pair term next to the jobs of the other lanes where
// one exists, else the global alpha (InterferenceModel::lane_factor, which the simulator uses
// too). The p99 is the same
// worst case with every member of the lane at its p99 iteration: a job's slow step can meet
// one slow GPU phase of each lane mate.
std::map<size_t, JobPrediction> predict(const LaneAllocator& allocator,
                                        const std::vector<JobProfile>& jobs,
                                        const PlannerOptions& options, bool estimate = false) {
  std::map<size_t, JobPrediction> predictions;
  std::vector<double> lane_demand;
  std::vector<std::vector<std::string>> lane_workloads;
  lane_inputs(allocator, jobs, lane_demand, lane_workloads);
  for (size_t l = 0; l < allocator.lanes().size(); ++l) {
    const auto& lane = allocator.lanes()[l];
    std::vector<LaneMember> members, tails;
    std::vector<TurnRank> ranks;  // the lane's turn order (turn_model.h)
    for (const auto& member : lane.jobs) {
      const auto& job = jobs[member.job_id];
      members.push_back({job.utilization, iteration_s(job)});
      ranks.push_back(turn_rank(job, options.turn_order, iteration_s(job)));
      if (options.tail_checks) tails.push_back({job.utilization, p99_iteration_s(job)});
    }
    const double parallel = options.interference.lane_factor(l, lane_demand, lane_workloads);
    for (size_t m = 0; m < lane.jobs.size(); ++m) {
      const auto index = static_cast<size_t>(lane.jobs[m].job_id);
      predictions[index] = JobPrediction{
          ordered_time_sharing(members, ranks, m, parallel, estimate),
          options.tail_checks
              ? tails[m].iteration_s * ordered_time_sharing(tails, ranks, m, parallel, false)
              : 0.0};
    }
  }
  return predictions;
}

// Necessary conditions for a job to join one lane, checked before the full prediction. Joining
// adds the newcomer's GPU work to the lane's round and can only raise the lane's parallel factor
// p (its demand grows, the other lanes stay), so with the factor the lane has now:
//   member m stays within its bound b_m only if the added work e (seconds per round) satisfies
//     e <= t_m ((b_m - 1 + u_m) / p - u_m) - (W - u_m t_m)      (W = sum_j u_j t_j),
//   the newcomer n only if W <= t_n ((b_n - 1 + u_n) / p - u_n),
// both from the worst case (1 - u) + p (u + others / t) that contended_time_sharing computes, and
// the same on the p99 step times (t99, the p99 bounds) when the tail is checked. Without p (the
// screen before issue 25's item 4) every lane of a GPU running above one GPU of demand passed the
// screen and failed the full check: at 100,000 candidates 6,710 small jobs spent their 64 full
// checks there and opened a GPU each.
struct LaneJoinScreen {
  int lane_id = -1;
  double factor = 1;        // the lane's parallel factor now
  double work = 0;          // W: sum of u_j t_j over its jobs
  double work_p99 = 0;      // the same with each job's p99 step time
  double capacity = 0;      // largest e its members' mean bounds allow
  double capacity_p99 = 0;  // largest e (on p99 steps) their p99 bounds allow
  int64_t slack_bytes = 0;  // lane slack plus the GPU's free memory for a new job
  // A turn policy other than fifo orders the lane (turn_model.h): a member that goes first may
  // wait for no other, so the screen counts no wait at all (W and e taken as 0) and never
  // refuses a job the full check would take.
  bool ordered = false;
};

std::vector<LaneJoinScreen> lane_join_screens(const LaneAllocator& allocator,
                                              const std::vector<JobProfile>& jobs,
                                              const PlannerOptions& options,
                                              const std::vector<double>& bounds,
                                              const std::vector<double>& p99_bounds) {
  std::vector<double> lane_demand;
  std::vector<std::vector<std::string>> lane_workloads;
  lane_inputs(allocator, jobs, lane_demand, lane_workloads);
  std::vector<LaneJoinScreen> screens;
  for (size_t l = 0; l < allocator.lanes().size(); ++l) {
    const auto& lane = allocator.lanes()[l];
    if (lane.solo || lane.jobs.empty()) continue;
    LaneJoinScreen screen;
    screen.lane_id = lane.id;
    screen.factor = options.interference.lane_factor(l, lane_demand, lane_workloads);
    screen.ordered = options.turn_order != TurnOrder::kFifo;
    for (const auto& member : lane.jobs) {
      const auto& job = jobs[static_cast<size_t>(member.job_id)];
      if (screen.ordered) break;
      screen.work += job.utilization * iteration_s(job);
      screen.work_p99 += job.utilization * p99_iteration_s(job);
    }
    screen.capacity = std::numeric_limits<double>::infinity();
    screen.capacity_p99 = std::numeric_limits<double>::infinity();
    for (const auto& member : lane.jobs) {
      const auto index = static_cast<size_t>(member.job_id);
      const auto& job = jobs[index];
      const double u = job.utilization;
      const double t = iteration_s(job);
      const double waits = screen.ordered ? 0.0 : screen.work - u * t;
      screen.capacity =
          std::min(screen.capacity, t * ((bounds[index] - 1.0 + u) / screen.factor - u) - waits);
      if (options.tail_checks) {
        const double t99 = p99_iteration_s(job);
        const double waits_p99 = screen.ordered ? 0.0 : screen.work_p99 - u * t99;
        screen.capacity_p99 =
            std::min(screen.capacity_p99,
                     t99 * ((p99_bounds[index] / t99 - 1.0 + u) / screen.factor - u) - waits_p99);
      }
    }
    screen.slack_bytes =
        lane.capacity_bytes - options.memory.lane_bytes(lane.load) + allocator.room_for_new_job();
    screens.push_back(screen);
  }
  return screens;
}

bool may_join(const LaneJoinScreen& screen, const JobProfile& job, double bound, double p99_bound,
              bool tail_checks) {
  constexpr double kSlack = 1 + 1e-9;
  const double u = job.utilization;
  const double t = iteration_s(job);
  // The newcomer's GPU work per round that its lane mates wait for (none counted when ordered).
  const double added = screen.ordered ? 0.0 : u * t;
  if (screen.slack_bytes < job.persistent_bytes) return false;
  if (screen.work > t * ((bound - 1.0 + u) / screen.factor - u) * kSlack) return false;
  if (added > screen.capacity * kSlack) return false;
  if (!tail_checks) return true;
  const double t99 = p99_iteration_s(job);
  const double added_p99 = screen.ordered ? 0.0 : u * t99;
  return screen.work_p99 <= t99 * ((p99_bound / t99 - 1.0 + u) / screen.factor - u) * kSlack &&
         added_p99 <= screen.capacity_p99 * kSlack;
}

bool within_bounds(const std::map<size_t, JobPrediction>& predictions,
                   const std::vector<double>& bounds, const std::vector<double>& p99_bounds) {
  for (const auto& [job, prediction] : predictions) {
    if (prediction.slowdown > bounds[job] + 1e-9) return false;
    if (prediction.p99_s > p99_bounds[job] * (1 + 1e-9)) return false;
  }
  return true;
}

}  // namespace

ConsolidationPlan plan_consolidation(const std::vector<JobProfile>& jobs,
                                     const PlannerOptions& options) {
  ConsolidationPlan plan;
  plan.context_bytes = options.memory.context_bytes;
  plan.single_lane = options.single_lane;
  plan.turn_order = options.turn_order;
  std::vector<std::string> gpu_order;  // first-seen order keeps the output stable
  std::map<std::string, int64_t> gpu_capacity;
  for (const auto& job : jobs) {
    auto [it, inserted] = gpu_capacity.emplace(job.gpu, job.gpu_capacity_bytes);
    if (inserted) gpu_order.push_back(job.gpu);
    it->second = std::max(it->second, job.gpu_capacity_bytes);
  }
  plan.gpus_before = static_cast<int>(gpu_order.size());

  std::vector<double> bounds;
  std::vector<double> p99_bounds;
  for (const auto& job : jobs) {
    bounds.push_back(bound_of(job, options));
    p99_bounds.push_back(options.tail_checks ? p99_bound_s(job, bounds.back())
                                             : std::numeric_limits<double>::infinity());
  }

  // First-fit decreasing by memory: large jobs first leaves small ones to fill the gaps.
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].persistent_bytes + jobs[a].ephemeral_peak_bytes >
           jobs[b].persistent_bytes + jobs[b].ephemeral_peak_bytes;
  });

  std::vector<OpenGpu> open;
  plan.jobs.resize(jobs.size());
  // Filled after the initialisation below (keeps that list of fields as it is).
  const auto set_tail_fields = [&](size_t i) {
    plan.jobs[i].p99_bound_s = p99_bounds[i];
    plan.jobs[i].solo_p99_s = p99_iteration_s(jobs[i]);
    plan.jobs[i].own_lane = needs_own_lane(jobs[i], options.tail_checks);
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    plan.jobs[i] = PlannedJob{jobs[i].job_id,
                              jobs[i].workflow,
                              jobs[i].gpu,
                              "",
                              -1,
                              false,
                              1.0,
                              1.0,
                              bounds[i],
                              "",
                              jobs[i].persistent_bytes,
                              jobs[i].ephemeral_peak_bytes,
                              jobs[i].iteration_ns,
                              jobs[i].memory_evidence};
    set_tail_fields(i);
  }

  auto try_place = [&](OpenGpu& gpu, size_t job) -> bool {
    const auto& profile = jobs[job];
    std::optional<LaneAllocator> best;
    int64_t best_free = 0;
    // Own lane (parallel) and shared lane (time-shared): keep the one that uses less memory,
    // leaving more room for the jobs still to come.
    const auto keep_if_within_bounds = [&](LaneAllocator& trial) {
      if (!within_bounds(predict(trial, jobs, options), bounds, p99_bounds)) return false;
      if (!best || trial.free_bytes() > best_free) {
        best_free = trial.free_bytes();
        best = std::move(trial);
      }
      return true;
    };
    int tried_lane = -1;
    bool shared_fits = false;
    for (bool shared : {false, true}) {
      if (shared && needs_own_lane(profile, options.tail_checks)) continue;
      AdmitOptions admit_options;
      admit_options.allow_shared_lane = shared;
      admit_options.allow_new_lane = !shared;
      admit_options.solo = needs_own_lane(profile, options.tail_checks);
      if (options.single_lane) admit_options.max_lanes = 1;
      LaneAllocator trial = gpu.allocator;
      const auto placement =
          trial.admit(static_cast<int64_t>(job), profile.demand(), admit_options);
      if (!placement) continue;
      if (shared) tried_lane = placement->lane_id;
      const bool fits = keep_if_within_bounds(trial);
      if (shared) shared_fits = fits;
    }
    // The allocator shares the lane that fits best by memory; when that lane is too busy to
    // join within the bounds, a lighter lane may do: the lanes whose GPU work per round leaves
    // the job within its bound before contention, lightest first, a few of them.
    if (tried_lane >= 0 && !shared_fits) {
      std::vector<std::pair<double, int>> lighter;
      for (const auto& screen :
           lane_join_screens(gpu.allocator, jobs, options, bounds, p99_bounds)) {
        if (screen.lane_id != tried_lane &&
            may_join(screen, profile, bounds[job], p99_bounds[job], options.tail_checks)) {
          lighter.emplace_back(screen.work, screen.lane_id);
        }
      }
      std::sort(lighter.begin(), lighter.end());
      constexpr size_t kJoinTries = 4;
      for (size_t k = 0; k < lighter.size() && k < kJoinTries; ++k) {
        LaneAllocator trial = gpu.allocator;
        if (!trial.admit_into(static_cast<int64_t>(job), profile.demand(), lighter[k].second)) {
          continue;
        }
        if (keep_if_within_bounds(trial)) break;
      }
    }
    if (!best) return false;
    gpu.allocator = std::move(*best);
    return true;
  };

  // Kept GPUs indexed by compute room (see below); a GPU's memory headroom (free memory plus
  // the largest lane slack) screens it before the full check. At most kMaxTries full checks per
  // job, so the search stays O(log G) per job on fleets of 1e5 GPUs.
  constexpr int kMaxTries = 64;
  std::set<std::pair<double, size_t>> by_room;  // (compute room, index) of GPUs that can take more
  std::vector<int64_t> headroom_of;
  std::unordered_set<std::string> open_names;
  size_t idle_cursor = 0;
  // Memory screens: the free memory left after a new job's context (a new lane needs its
  // requirement there) and the largest lane slack plus that memory (joining a lane needs at
  // least P there).
  std::vector<int64_t> slack_of;
  // Time-sharing screen: each lane's LaneJoinScreen (its work per round, what its members'
  // bounds leave, its parallel factor now); a GPU none of whose lanes may take the job in a
  // shared lane, and without memory for a lane of its own, is skipped without a full check.
  // (Without a screen, at 100,000 candidates the small jobs spent their 64 full checks on GPUs
  // with lane slack whose lanes were too busy to join, and 37,516 of them opened a GPU of their
  // own: 47,061 GPUs; with a screen that left out the lane's parallel factor, 6,710.)
  std::vector<std::vector<LaneJoinScreen>> join_screens_of;
  const auto headroom = [&](const LaneAllocator& allocator, int64_t& slack) {
    slack = 0;
    for (const auto& lane : allocator.lanes()) {
      if (!lane.solo) {
        slack = std::max(slack, lane.capacity_bytes - options.memory.lane_bytes(lane.load));
      }
    }
    slack += allocator.room_for_new_job();
    return allocator.room_for_new_job();
  };
  // Compute room of a kept GPU: the largest demand a new lane may add within its jobs' bounds.
  // A GPU whose room is below the smallest utilization of all jobs is full and leaves the index.
  // The screen uses the smallest contention term in the model (the global alpha or any measured
  // pair term): it may let through a GPU the full check refuses, never the other way round.
  InterferenceModel screen;
  screen.alpha = options.interference.smallest_term();
  double min_utilization = 1.0;
  for (const auto& job : jobs) min_utilization = std::min(min_utilization, job.utilization);
  std::vector<double> room_of;
  const auto compute_room = [&](const LaneAllocator& allocator) {
    // A new lane of demand x stretches the GPU phases of job j in lane L (demand u_L) by
    // parallel_slowdown(L, lanes + x); j tolerates the factor tolerated_parallel_slowdown gives
    // for its bound. The room is the largest x (at most one GPU) every lane tolerates (the factor
    // grows with x, so a bisection finds it). (Leaving alpha out made the room optimistic by
    // about alpha * x: the best-fit search then tried the GPUs at the edge first, every full
    // check failed, and the 64-check limit opened new GPUs.)
    std::vector<double> lane_demands;
    std::vector<double> lane_tolerance;
    for (const auto& lane : allocator.lanes()) {
      std::vector<LaneMember> members, tails;
      double lane_demand = 0;
      for (const auto& member : lane.jobs) {
        const auto& profile = jobs[static_cast<size_t>(member.job_id)];
        lane_demand += profile.utilization;
        members.push_back({profile.utilization, iteration_s(profile)});
        if (options.tail_checks) tails.push_back({profile.utilization, p99_iteration_s(profile)});
      }
      double tolerance = 1e9;
      // The parallel factor each member tolerates, contention stretching GPU phases only (as
      // predict() and the simulator have it), for its mean bound and for its p99 bound. Under
      // a turn order other than fifo a member may wait for no lane mate (turn_model.h): the
      // screen then counts its own GPU phase only, so it never refuses what the full check takes.
      const bool ordered = options.turn_order != TurnOrder::kFifo;
      for (size_t m = 0; m < lane.jobs.size(); ++m) {
        const auto index = static_cast<size_t>(lane.jobs[m].job_id);
        const auto own = [&](const std::vector<LaneMember>& list) {
          return ordered ? std::vector<LaneMember>{list[m]} : list;
        };
        const size_t at = ordered ? 0 : m;
        tolerance =
            std::min(tolerance, tolerated_parallel_slowdown(own(members), at, bounds[index]));
        if (!options.tail_checks) continue;
        tolerance = std::min(
            tolerance,
            tolerated_parallel_slowdown(own(tails), at, p99_bounds[index] / tails[m].iteration_s));
      }
      lane_demands.push_back(std::min(1.0, lane_demand));
      lane_tolerance.push_back(tolerance);
    }
    auto with_newcomer = lane_demands;
    with_newcomer.push_back(0);
    const auto tolerated = [&](double extra) {
      with_newcomer.back() = extra;
      for (size_t l = 0; l < lane_demands.size(); ++l) {
        if (screen.parallel_slowdown(l, with_newcomer) > lane_tolerance[l]) {
          return false;
        }
      }
      return true;
    };
    if (!tolerated(0)) return -1.0;
    if (tolerated(1.0)) return 1.0;  // a job asks for at most one GPU
    double low = 0;
    double high = 1.0;
    for (int step = 0; step < 40; ++step) {
      const double middle = 0.5 * (low + high);
      (tolerated(middle) ? low : high) = middle;
    }
    return low;
  };
  int64_t min_need = std::numeric_limits<int64_t>::max();
  for (const auto& job : jobs) min_need = std::min(min_need, job.persistent_bytes);
  const auto reindex = [&](size_t index) {
    by_room.erase({room_of[index], index});
    headroom_of[index] = headroom(open[index].allocator, slack_of[index]);
    join_screens_of[index] =
        lane_join_screens(open[index].allocator, jobs, options, bounds, p99_bounds);
    room_of[index] = compute_room(open[index].allocator);
    if (room_of[index] + 1e-12 >= min_utilization && slack_of[index] >= min_need) {
      by_room.emplace(room_of[index], index);
    }
  };
  const auto try_open = [&](const std::string& name, size_t job) {
    open.push_back(OpenGpu{name, LaneAllocator(gpu_capacity[name], options.memory)});
    if (!try_place(open.back(), job)) {
      open.pop_back();
      return false;
    }
    open_names.insert(name);
    room_of.push_back(0);
    slack_of.push_back(0);
    join_screens_of.emplace_back();
    headroom_of.push_back(0);
    reindex(open.size() - 1);
    return true;
  };

  for (size_t job : order) {
    bool placed = false;
    int tries = 0;
    int scanned = 0;
    // Start at GPUs with room for the job's own lane (P + guarded T): Salus's order tries a new
    // lane first, and GPUs with less room rarely take the job by sharing a lane.
    const int64_t own_need = options.memory.lane_bytes_with(LaneLoad{}, jobs[job].demand());
    const bool may_share = !needs_own_lane(jobs[job], options.tail_checks);
    // Best fit by compute room (candidates are low-utilization jobs: compute is what fills a
    // GPU first), skipping GPUs without memory room for the job's own lane.
    for (auto it = by_room.lower_bound({jobs[job].utilization - 1e-12, 0});
         it != by_room.end() && tries < kMaxTries && scanned < 64 * kMaxTries; ++it) {
      const size_t index = it->second;
      ++scanned;
      const bool joinable =
          may_share && std::any_of(join_screens_of[index].begin(), join_screens_of[index].end(),
                                   [&](const LaneJoinScreen& screen) {
                                     return may_join(screen, jobs[job], bounds[job],
                                                     p99_bounds[job], options.tail_checks);
                                   });
      if (headroom_of[index] < own_need && !joinable) continue;
      ++tries;
      if ((placed = try_place(open[index], job))) {
        reindex(index);
        break;
      }
    }
    if (!placed && !open_names.count(jobs[job].gpu)) {
      // Open a GPU: the job's own first (no move), then idle GPUs of the fleet in input order.
      placed = try_open(jobs[job].gpu, job);
    }
    for (int attempts = 0; !placed && attempts < kMaxTries; ++attempts) {
      while (idle_cursor < gpu_order.size() && open_names.count(gpu_order[idle_cursor])) {
        ++idle_cursor;
      }
      if (idle_cursor >= gpu_order.size()) break;
      const std::string name = gpu_order[idle_cursor];
      placed = try_open(name, job);
      if (!placed)
        break;  // an empty GPU did not hold it: another empty one of the fleet
                // (same model in practice) will not either
    }
    if (!placed) {
      plan.jobs[job].reason = "does not fit any GPU within the safety condition and slowdown bound";
    }
  }

  for (const auto& gpu : open) {
    PlannedGpu planned{gpu.name, gpu.allocator.capacity_bytes(), gpu.allocator.free_bytes(), {}};
    const auto worst = predict(gpu.allocator, jobs, options);
    const auto estimates = predict(gpu.allocator, jobs, options, /*estimate=*/true);
    for (const auto& lane : gpu.allocator.lanes()) {
      PlannedLane planned_lane{lane.id, lane.offset_bytes, lane.capacity_bytes, lane.solo, {}};
      for (const auto& member : lane.jobs) {
        auto& planned_job = plan.jobs[static_cast<size_t>(member.job_id)];
        planned_job.to_gpu = gpu.name;
        planned_job.lane_id = lane.id;
        planned_job.moved = planned_job.to_gpu != planned_job.from_gpu;
        const auto index = static_cast<size_t>(member.job_id);
        planned_job.worst_case_slowdown = worst.at(index).slowdown;
        planned_job.predicted_slowdown = estimates.at(index).slowdown;
        planned_job.predicted_p99_s = worst.at(index).p99_s;
        planned_lane.job_ids.push_back(planned_job.job_id);
      }
      planned.lanes.push_back(std::move(planned_lane));
    }
    plan.gpus.push_back(std::move(planned));
  }
  // A GPU holding a job that could not be placed is not free.
  std::unordered_set<std::string> holds_unplaced;
  for (const auto& planned : plan.jobs) {
    if (planned.to_gpu.empty()) holds_unplaced.insert(planned.from_gpu);
  }
  for (const auto& name : gpu_order) {
    if (!open_names.count(name) && !holds_unplaced.count(name)) plan.gpus_freed.push_back(name);
  }
  plan.gpus_after = plan.gpus_before - static_cast<int>(plan.gpus_freed.size());
  return plan;
}

std::vector<ReplayedJob> replay_plan(const std::vector<JobProfile>& jobs,
                                     const ConsolidationPlan& plan, const PlannerOptions& options,
                                     double cycles) {
  std::map<std::string, int> gpu_index;
  for (const auto& gpu : plan.gpus) gpu_index.emplace(gpu.gpu, static_cast<int>(gpu_index.size()));
  double horizon = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (plan.jobs[i].to_gpu.empty()) continue;
    horizon = std::max(horizon, iteration_s(jobs[i]) * plan.jobs[i].predicted_slowdown);
  }
  horizon *= cycles;
  // Bound the work: a plan mixing 0.1 s and 50,000 s iterations would need millions of short
  // iterations to cover the long ones (found by the candidates fuzz target). Shrink the horizon
  // so that at most kMaxReplayIterations are simulated, keeping at least two of the longest.
  // 2e5 (was 2e6, which still took over 10 s under the fuzz build's sanitizers on a busy machine,
  // the fuzz target's time limit): replay is a check of the plan, not a long simulation.
  constexpr double kMaxReplayIterations = 2e5;
  double total = 0;
  double longest = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (plan.jobs[i].to_gpu.empty()) continue;
    total += horizon / iteration_s(jobs[i]);
    longest = std::max(longest, iteration_s(jobs[i]) * plan.jobs[i].predicted_slowdown);
  }
  if (total > kMaxReplayIterations) {
    const double shrunk = std::max(2 * longest, horizon * kMaxReplayIterations / total);
    if (total * shrunk / horizon > 2 * kMaxReplayIterations) {
      // Even two of the longest iterations need too many short ones (iteration times spanning
      // more than six orders of magnitude): refuse rather than run for minutes.
      throw std::invalid_argument(
          "plan too wide to replay: its iteration times span more than 1e5x (replay would "
          "simulate over 4e5 iterations)");
    }
    horizon = shrunk;
  }
  std::vector<SimJob> sim_jobs;
  std::vector<size_t> source;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& planned = plan.jobs[i];
    if (planned.to_gpu.empty()) continue;
    SimJob job;
    job.id = static_cast<int64_t>(i);
    job.name = jobs[i].job_id;
    job.iteration_s = iteration_s(jobs[i]);
    // Enough iterations to outlast the horizon even alone.
    job.iterations = std::min<int64_t>(
        kMaxIterations, static_cast<int64_t>(std::ceil(horizon / job.iteration_s)) + 2);
    // The turn order's inputs: srtf's remaining time (the steps label on top of the horizon,
    // so that every job outlasts it and the order of remaining times is the plan's; without
    // one, as many iterations as the simulator takes: after every job that has one), the
    // priority label.
    if (plan.turn_order == TurnOrder::kSrtf) {
      const auto steps = turn_steps(jobs[i]);
      job.iterations =
          steps ? std::min<int64_t>(kMaxIterations, job.iterations + static_cast<int64_t>(*steps))
                : kMaxIterations;
    }
    job.priority = turn_priority(jobs[i]);
    job.utilization = std::clamp(jobs[i].utilization, 1e-6, 1.0);
    // The job's measured tail, so the replay's step times can be held against the p99 bound.
    if (options.tail_checks) {
      job.iteration_p99_s = std::min(p99_iteration_s(jobs[i]), 50 * job.iteration_s);
    }
    job.workload = workload_of(jobs[i]);  // the pair terms apply in the replay too
    job.memory = jobs[i].demand();
    job.pinned_gpu = gpu_index.at(planned.to_gpu);
    job.pinned_lane = planned.lane_id;
    sim_jobs.push_back(job);
    source.push_back(i);
  }
  std::vector<ReplayedJob> out;
  if (sim_jobs.empty()) return out;
  SimConfig config;
  config.gpus = static_cast<int>(plan.gpus.size());
  config.lanes = true;
  config.switch_cost_s = 0;
  config.memory = options.memory;
  config.interference = options.interference;
  config.stop_at_s = horizon;
  config.record_step_times = true;
  config.gpu_capacity_bytes = 1;
  for (const auto& gpu : plan.gpus) {
    config.gpu_capacity_bytes = std::max(config.gpu_capacity_bytes, gpu.capacity_bytes);
  }
  // The simulator's policy that takes turns as the lanes' arbiter does under the plan's policy.
  std::unique_ptr<Policy> turns;
  if (plan.turn_order == TurnOrder::kSrtf) {
    turns = std::make_unique<SrtfPolicy>();
  } else if (plan.turn_order == TurnOrder::kPriority) {
    turns = std::make_unique<PriorityPolicy>();
  } else {
    turns = std::make_unique<PackPolicy>();
  }
  const auto result = simulate(sim_jobs, *turns, config);
  for (size_t k = 0; k < sim_jobs.size(); ++k) {
    const auto& planned = plan.jobs[source[k]];
    out.push_back(ReplayedJob{jobs[source[k]].job_id, planned.predicted_slowdown,
                              result.jobs[k].slowdown,
                              options.tail_checks ? planned.predicted_p99_s : 0.0,
                              options.tail_checks ? result.jobs[k].p99_step_s : 0.0});
  }
  return out;
}

nlohmann::json plan_to_json(const ConsolidationPlan& plan) {
  nlohmann::json out;
  out["gpus_before"] = plan.gpus_before;
  out["gpus_after"] = plan.gpus_after;
  out["gpus_freed"] = plan.gpus_freed;
  out["context_bytes"] = plan.context_bytes;
  out["single_lane"] = plan.single_lane;
  // fifo plans stay as they were before the planner modelled turn policies (and apply as fifo).
  if (plan.turn_order != TurnOrder::kFifo) out["turn_policy"] = turn_order_name(plan.turn_order);
  out["gpus"] = nlohmann::json::array();
  for (const auto& gpu : plan.gpus) {
    nlohmann::json lanes = nlohmann::json::array();
    for (const auto& lane : gpu.lanes) {
      lanes.push_back({{"lane_id", lane.lane_id},
                       {"offset_bytes", lane.offset_bytes},
                       {"capacity_bytes", lane.capacity_bytes},
                       {"solo", lane.solo},
                       {"jobs", lane.job_ids}});
    }
    out["gpus"].push_back({{"gpu", gpu.gpu},
                           {"capacity_bytes", gpu.capacity_bytes},
                           {"free_bytes", gpu.free_bytes},
                           {"lanes", lanes}});
  }
  out["jobs"] = nlohmann::json::array();
  for (const auto& job : plan.jobs) {
    nlohmann::json row{{"job_id", job.job_id},
                       {"workflow", job.workflow},
                       {"from_gpu", job.from_gpu},
                       {"to_gpu", job.to_gpu},
                       {"lane_id", job.lane_id},
                       {"moved", job.moved},
                       {"predicted_slowdown", job.predicted_slowdown},
                       {"worst_case_slowdown", job.worst_case_slowdown},
                       {"max_slowdown", job.max_slowdown},
                       {"persistent_bytes", job.persistent_bytes},
                       {"ephemeral_peak_bytes", job.ephemeral_peak_bytes},
                       {"solo_iteration_ns", job.solo_iteration_ns},
                       {"predicted_p99_s", job.predicted_p99_s},
                       {"p99_bound_s", job.p99_bound_s},
                       {"solo_p99_s", job.solo_p99_s},
                       {"own_lane", job.own_lane}};
    if (!job.reason.empty()) row["reason"] = job.reason;
    if (!job.memory_evidence.empty()) row["memory_evidence"] = job.memory_evidence;
    out["jobs"].push_back(row);
  }
  return out;
}

TurnOrder plan_turn_order(const nlohmann::json& plan, const std::string& source) {
  if (!plan.is_object() || !plan.contains("turn_policy")) return TurnOrder::kFifo;
  const auto& value = plan["turn_policy"];
  const auto order = value.is_string() ? turn_order_named(value.get<std::string>()) : std::nullopt;
  if (!order) {
    throw std::runtime_error(source + ": turn_policy " + value.dump() +
                             ": expected \"fifo\", \"srtf\" or \"priority\"");
  }
  return *order;
}

void write_plan_table(const ConsolidationPlan& plan, std::ostream& out, bool wide) {
  out << "GPUs: " << plan.gpus_before << " -> " << plan.gpus_after << " (" << plan.gpus_freed.size()
      << " freed)" << (plan.single_lane ? ", one lane per GPU" : "") << "\n";
  if (plan.turn_order != TurnOrder::kFifo) {
    out << "turn policy: " << turn_order_model(plan.turn_order) << "\n";
  }
  using Align = common::TextTable::Align;
  common::TextTable table({{"JOB", Align::left, 40},
                           {"FROM", Align::left, 24},
                           {"TO", Align::left, 24},
                           {"LANE", Align::right},
                           {"SLOWDOWN", Align::right},
                           {"MAX", Align::right},
                           {"P99_MS", Align::right},
                           {"P99_MAX_MS", Align::right}});
  auto fixed3 = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", value);
    return std::string(text);
  };
  auto fixed1 = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", value);
    return std::string(text);
  };
  for (const auto& job : plan.jobs) {
    const bool placed = !job.to_gpu.empty();
    table.add_row({job.job_id, job.from_gpu, placed ? job.to_gpu : "-", std::to_string(job.lane_id),
                   fixed3(job.predicted_slowdown), fixed3(job.max_slowdown),
                   placed ? fixed1(job.predicted_p99_s * 1e3) : "-",
                   fixed1(job.p99_bound_s * 1e3)});
    if (!job.memory_evidence.empty()) table.add_note("  P and T: " + job.memory_evidence);
    if (!job.reason.empty()) table.add_note("  not placed: " + job.reason);
  }
  table.print(out, wide);
  if (!plan.gpus_freed.empty()) {
    out << "freed:";
    for (const auto& gpu : plan.gpus_freed) out << " " << gpu;
    out << "\n";
  }
}

}  // namespace fleetscope::sharer
