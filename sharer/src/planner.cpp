#include "fleetscope/sharer/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
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

// Slowdown of every job (by index into `jobs`) placed on one GPU: worst case, or the estimate.
std::map<size_t, double> predict(const LaneAllocator& allocator,
                                 const std::vector<JobProfile>& jobs, const PlannerOptions& options,
                                 bool estimate = false) {
  std::map<size_t, double> slowdowns;
  std::vector<double> lane_demand;
  for (const auto& lane : allocator.lanes()) {
    double demand = 0;
    for (const auto& member : lane.jobs) demand += jobs[member.job_id].utilization;
    lane_demand.push_back(std::min(1.0, demand));
  }
  for (size_t l = 0; l < allocator.lanes().size(); ++l) {
    const auto& lane = allocator.lanes()[l];
    std::vector<LaneMember> members;
    for (const auto& member : lane.jobs) {
      members.push_back({jobs[member.job_id].utilization, iteration_s(jobs[member.job_id])});
    }
    const double parallel = options.interference.parallel_slowdown(l, lane_demand);
    for (size_t m = 0; m < lane.jobs.size(); ++m) {
      slowdowns[static_cast<size_t>(lane.jobs[m].job_id)] =
          contended_time_sharing(members, m, parallel, estimate);
    }
  }
  return slowdowns;
}

bool within_bounds(const std::map<size_t, double>& slowdowns, const std::vector<double>& bounds) {
  for (const auto& [job, slowdown] : slowdowns) {
    if (slowdown > bounds[job] + 1e-9) return false;
  }
  return true;
}

}  // namespace

ConsolidationPlan plan_consolidation(const std::vector<JobProfile>& jobs,
                                     const PlannerOptions& options) {
  ConsolidationPlan plan;
  plan.context_bytes = options.memory.context_bytes;
  plan.single_lane = options.single_lane;
  std::vector<std::string> gpu_order;  // first-seen order keeps the output stable
  std::map<std::string, int64_t> gpu_capacity;
  for (const auto& job : jobs) {
    auto [it, inserted] = gpu_capacity.emplace(job.gpu, job.gpu_capacity_bytes);
    if (inserted) gpu_order.push_back(job.gpu);
    it->second = std::max(it->second, job.gpu_capacity_bytes);
  }
  plan.gpus_before = static_cast<int>(gpu_order.size());

  std::vector<double> bounds;
  for (const auto& job : jobs) bounds.push_back(bound_of(job, options));

  // First-fit decreasing by memory: large jobs first leaves small ones to fill the gaps.
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return jobs[a].persistent_bytes + jobs[a].ephemeral_peak_bytes >
           jobs[b].persistent_bytes + jobs[b].ephemeral_peak_bytes;
  });

  std::vector<OpenGpu> open;
  plan.jobs.resize(jobs.size());
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
  }

  auto try_place = [&](OpenGpu& gpu, size_t job) -> bool {
    const auto& profile = jobs[job];
    std::optional<LaneAllocator> best;
    int64_t best_free = 0;
    // Own lane (parallel) and shared lane (time-shared): keep the one that uses less memory,
    // leaving more room for the jobs still to come.
    for (bool shared : {false, true}) {
      if (shared && profile.latency_sensitive()) continue;
      AdmitOptions admit_options;
      admit_options.allow_shared_lane = shared;
      admit_options.allow_new_lane = !shared;
      admit_options.solo = profile.latency_sensitive();
      if (options.single_lane) admit_options.max_lanes = 1;
      LaneAllocator trial = gpu.allocator;
      if (!trial.admit(static_cast<int64_t>(job), profile.demand(), admit_options)) continue;
      if (!within_bounds(predict(trial, jobs, options), bounds)) continue;
      if (!best || trial.free_bytes() > best_free) {
        best_free = trial.free_bytes();
        best = std::move(trial);
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
      std::vector<LaneMember> members;
      double lane_demand = 0;
      for (const auto& member : lane.jobs) {
        const auto& profile = jobs[static_cast<size_t>(member.job_id)];
        lane_demand += profile.utilization;
        members.push_back({profile.utilization, iteration_s(profile)});
      }
      double tolerance = 1e9;
      // The parallel factor each member tolerates, contention stretching GPU phases only (as
      // predict() and the simulator have it).
      for (size_t m = 0; m < lane.jobs.size(); ++m) {
        tolerance =
            std::min(tolerance, tolerated_parallel_slowdown(
                                    members, m, bounds[static_cast<size_t>(lane.jobs[m].job_id)]));
      }
      lane_demands.push_back(std::min(1.0, lane_demand));
      lane_tolerance.push_back(tolerance);
    }
    auto with_newcomer = lane_demands;
    with_newcomer.push_back(0);
    const auto tolerated = [&](double extra) {
      with_newcomer.back() = extra;
      for (size_t l = 0; l < lane_demands.size(); ++l) {
        if (options.interference.parallel_slowdown(l, with_newcomer) > lane_tolerance[l]) {
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
    // Best fit by compute room (candidates are low-utilization jobs: compute is what fills a
    // GPU first), skipping GPUs without memory room for the job's own lane.
    for (auto it = by_room.lower_bound({jobs[job].utilization - 1e-12, 0});
         it != by_room.end() && tries < kMaxTries && scanned < 64 * kMaxTries; ++it) {
      const size_t index = it->second;
      ++scanned;
      if (headroom_of[index] < own_need && slack_of[index] < jobs[job].persistent_bytes) continue;
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
    const auto slowdowns = predict(gpu.allocator, jobs, options);
    const auto estimates = predict(gpu.allocator, jobs, options, /*estimate=*/true);
    for (const auto& lane : gpu.allocator.lanes()) {
      PlannedLane planned_lane{lane.id, lane.offset_bytes, lane.capacity_bytes, lane.solo, {}};
      for (const auto& member : lane.jobs) {
        auto& planned_job = plan.jobs[static_cast<size_t>(member.job_id)];
        planned_job.to_gpu = gpu.name;
        planned_job.lane_id = lane.id;
        planned_job.moved = planned_job.to_gpu != planned_job.from_gpu;
        planned_job.worst_case_slowdown = slowdowns.at(static_cast<size_t>(member.job_id));
        planned_job.predicted_slowdown = estimates.at(static_cast<size_t>(member.job_id));
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
    job.utilization = std::clamp(jobs[i].utilization, 1e-6, 1.0);
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
  config.gpu_capacity_bytes = 1;
  for (const auto& gpu : plan.gpus) {
    config.gpu_capacity_bytes = std::max(config.gpu_capacity_bytes, gpu.capacity_bytes);
  }
  const auto result = simulate(sim_jobs, PackPolicy{}, config);
  for (size_t k = 0; k < sim_jobs.size(); ++k) {
    out.push_back(ReplayedJob{jobs[source[k]].job_id, plan.jobs[source[k]].predicted_slowdown,
                              result.jobs[k].slowdown});
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
                       {"solo_iteration_ns", job.solo_iteration_ns}};
    if (!job.reason.empty()) row["reason"] = job.reason;
    if (!job.memory_evidence.empty()) row["memory_evidence"] = job.memory_evidence;
    out["jobs"].push_back(row);
  }
  return out;
}

void write_plan_table(const ConsolidationPlan& plan, std::ostream& out, bool wide) {
  out << "GPUs: " << plan.gpus_before << " -> " << plan.gpus_after << " (" << plan.gpus_freed.size()
      << " freed)" << (plan.single_lane ? ", one lane per GPU" : "") << "\n";
  using Align = common::TextTable::Align;
  common::TextTable table({{"JOB", Align::left, 40},
                           {"FROM", Align::left, 24},
                           {"TO", Align::left, 24},
                           {"LANE", Align::right},
                           {"SLOWDOWN", Align::right},
                           {"MAX", Align::right}});
  auto fixed3 = [](double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", value);
    return std::string(text);
  };
  for (const auto& job : plan.jobs) {
    table.add_row({job.job_id, job.from_gpu, job.to_gpu.empty() ? "-" : job.to_gpu,
                   std::to_string(job.lane_id), fixed3(job.predicted_slowdown),
                   fixed3(job.max_slowdown)});
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
