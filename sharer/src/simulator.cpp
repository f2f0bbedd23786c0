#include "fleetscope/sharer/simulator.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <stdexcept>

#include "fleetscope/sharer/lane_allocator.h"

namespace fleetscope::sharer {

namespace {

struct Event {
  double time_s;
  int64_t sequence;  // ties resolve in creation order, so runs are deterministic
  bool arrival;
  int64_t ref;  // job index for arrivals, run id for iteration ends

  bool operator>(const Event& other) const {
    return time_s != other.time_s ? time_s > other.time_s : sequence > other.sequence;
  }
};

// The execution slot of one lane (or of a gang job spanning whole GPUs).
struct Run {
  std::vector<int> gpus;
  int lane_id = -1;
  bool gang = false;
  std::vector<size_t> jobs;
  bool busy = false;
  size_t running = 0;
  double iteration_started_s = 0;
  double demand = 0;      // utilization of the running iteration
  int64_t last_job = -1;  // for the switch cost
};

struct Gpu {
  LaneAllocator allocator;
  bool gang_held = false;
  double running_demand = 0;  // sum of the utilization of iterations running now
};

struct JobRuntime {
  JobState state;
  bool admitted = false;
  bool finished = false;
  double start_s = -1;
  double finish_s = 0;
  int64_t preemptions = 0;
  int64_t run = -1;
};

class Engine {
 public:
  Engine(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config)
      : jobs_(jobs), policy_(policy), config_(config) {
    for (int g = 0; g < config.gpus; ++g) {
      gpus_.push_back(Gpu{LaneAllocator(config.gpu_capacity_bytes, config.margin), false, 0});
    }
    runtime_.resize(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      runtime_[i].state.job = &jobs[i];
      validate(jobs[i]);
      push(jobs[i].submit_s, true, static_cast<int64_t>(i));
    }
  }

  SimResult run() {
    while (!events_.empty()) {
      const double now = events_.top().time_s;
      while (!events_.empty() && events_.top().time_s == now) {
        const Event event = events_.top();
        events_.pop();
        ++processed_;
        if (event.arrival) {
          pending_.push_back(static_cast<size_t>(event.ref));
        } else {
          end_iteration(event.ref, now);
        }
      }
      schedule(now);
    }
    if (!pending_.empty()) throw std::logic_error("simulation ended with jobs still waiting");
    return summarise();
  }

 private:
  void validate(const SimJob& job) const {
    if (job.num_gpu > config_.gpus) {
      throw std::invalid_argument("job " + job.name + " needs " + std::to_string(job.num_gpu) +
                                  " GPUs but the cluster has " + std::to_string(config_.gpus));
    }
    if (required_bytes_with(LaneLoad{}, job.memory, config_.margin) > config_.gpu_capacity_bytes) {
      throw std::invalid_argument("job " + job.name + " needs more memory than one GPU has");
    }
  }

  void push(double time_s, bool arrival, int64_t ref) {
    events_.push(Event{time_s, next_sequence_++, arrival, ref});
  }

  bool before(size_t a, size_t b, bool admission) const {
    const auto& sa = runtime_[a].state;
    const auto& sb = runtime_[b].state;
    const double ka = admission ? policy_.admission_key(sa) : policy_.turn_key(sa);
    const double kb = admission ? policy_.admission_key(sb) : policy_.turn_key(sb);
    if (ka != kb) return ka < kb;
    if (jobs_[a].submit_s != jobs_[b].submit_s) return jobs_[a].submit_s < jobs_[b].submit_s;
    return jobs_[a].id < jobs_[b].id;
  }

  void schedule(double now) {
    std::sort(pending_.begin(), pending_.end(),
              [&](size_t a, size_t b) { return before(a, b, true); });
    std::vector<size_t> still_waiting;
    bool blocked = false;
    for (size_t job : pending_) {
      if (blocked || !admit(job)) {
        still_waiting.push_back(job);
        if (!policy_.backfill()) blocked = true;
      }
    }
    pending_ = std::move(still_waiting);
    for (auto& [id, run] : runs_) {
      if (!run.busy && !run.jobs.empty()) start_iteration(id, run, now);
    }
    int used = 0;
    for (const auto& gpu : gpus_) used += (gpu.gang_held || !gpu.allocator.empty()) ? 1 : 0;
    gpus_used_peak_ = std::max(gpus_used_peak_, used);
  }

  bool gpu_is_empty(const Gpu& gpu) const { return !gpu.gang_held && gpu.allocator.empty(); }

  bool admit(size_t job_index) {
    const SimJob& job = jobs_[job_index];
    if (job.num_gpu > 1) return admit_gang(job_index);
    AdmitOptions options;
    if (policy_.exclusive() || !config_.lanes) {
      options.max_lanes = 1;
      options.new_lane_bytes = config_.gpu_capacity_bytes;
    }
    int best_gpu = -1;
    std::pair<double, int64_t> best_score{std::numeric_limits<double>::max(), 0};
    for (int g = 0; g < config_.gpus; ++g) {
      const Gpu& gpu = gpus_[static_cast<size_t>(g)];
      if (gpu.gang_held) continue;
      if (policy_.exclusive() && !gpu.allocator.empty()) continue;
      auto placement = gpu.allocator.probe(job.memory, options);
      if (!placement) continue;
      // Consolidating policies fill used GPUs first; the others spread over the least loaded.
      const double load = policy_.consolidate() ? (gpu.allocator.empty() ? 1.0 : 0.0)
                                                : static_cast<double>(gpu.allocator.job_count());
      const std::pair<double, int64_t> score{load, placement->leftover_bytes};
      if (score < best_score) {
        best_score = score;
        best_gpu = g;
      }
    }
    if (best_gpu < 0) return false;
    Gpu& gpu = gpus_[static_cast<size_t>(best_gpu)];
    auto placement = gpu.allocator.admit(static_cast<int64_t>(job_index), job.memory, options);
    const auto key = std::make_pair(best_gpu, placement->lane_id);
    auto found = lane_runs_.find(key);
    int64_t run_id;
    if (found == lane_runs_.end()) {
      run_id = next_run_++;
      lane_runs_[key] = run_id;
      Run run;
      run.gpus = {best_gpu};
      run.lane_id = placement->lane_id;
      runs_[run_id] = run;
    } else {
      run_id = found->second;
    }
    runs_[run_id].jobs.push_back(job_index);
    runtime_[job_index].admitted = true;
    runtime_[job_index].run = run_id;
    return true;
  }

  bool admit_gang(size_t job_index) {
    std::vector<int> chosen;
    for (int g = 0; g < config_.gpus && static_cast<int>(chosen.size()) < jobs_[job_index].num_gpu;
         ++g) {
      if (gpu_is_empty(gpus_[static_cast<size_t>(g)])) chosen.push_back(g);
    }
    if (static_cast<int>(chosen.size()) < jobs_[job_index].num_gpu) return false;
    for (int g : chosen) gpus_[static_cast<size_t>(g)].gang_held = true;
    Run run;
    run.gpus = chosen;
    run.gang = true;
    run.jobs = {job_index};
    const int64_t run_id = next_run_++;
    runs_[run_id] = run;
    runtime_[job_index].admitted = true;
    runtime_[job_index].run = run_id;
    return true;
  }

  void start_iteration(int64_t run_id, Run& run, double now) {
    size_t next = run.jobs.front();
    for (size_t candidate : run.jobs) {
      if (before(candidate, next, false)) next = candidate;
    }
    const SimJob& job = jobs_[next];
    double duration = job.iteration_s;
    if (!run.gang) {
      Gpu& gpu = gpus_[static_cast<size_t>(run.gpus.front())];
      const double own = job.utilization;
      duration *= config_.interference.parallel_slowdown(own, own + gpu.running_demand);
      gpu.running_demand += own;
    }
    if (run.last_job >= 0 && run.last_job != static_cast<int64_t>(next)) {
      duration += config_.switch_cost_s;
      auto& previous = runtime_[static_cast<size_t>(run.last_job)];
      if (!previous.finished) ++previous.preemptions;
    }
    auto& runtime = runtime_[next];
    if (runtime.start_s < 0) runtime.start_s = now;
    run.busy = true;
    run.running = next;
    run.iteration_started_s = now;
    run.demand = run.gang ? 0 : job.utilization;
    push(now + duration, false, run_id);
  }

  void end_iteration(int64_t run_id, double now) {
    Run& run = runs_.at(run_id);
    run.busy = false;
    const size_t job_index = run.running;
    if (!run.gang) gpus_[static_cast<size_t>(run.gpus.front())].running_demand -= run.demand;
    auto& runtime = runtime_[job_index];
    runtime.state.done_iterations += 1;
    runtime.state.attained_s += now - run.iteration_started_s;
    runtime.state.last_turn_end_s = now;
    run.last_job = static_cast<int64_t>(job_index);
    if (runtime.state.done_iterations < jobs_[job_index].iterations) return;

    runtime.finished = true;
    runtime.finish_s = now;
    std::erase(run.jobs, job_index);
    if (run.gang) {
      for (int g : run.gpus) gpus_[static_cast<size_t>(g)].gang_held = false;
      runs_.erase(run_id);
      return;
    }
    const int g = run.gpus.front();
    Gpu& gpu = gpus_[static_cast<size_t>(g)];
    gpu.allocator.release(static_cast<int64_t>(job_index));
    if (gpu.allocator.find_lane(run.lane_id) == nullptr) {
      lane_runs_.erase({g, run.lane_id});
      runs_.erase(run_id);
    }
  }

  SimResult summarise() const {
    SimResult result;
    result.policy = std::string(policy_.name());
    result.lanes = config_.lanes && !policy_.exclusive();
    result.gpus = config_.gpus;
    result.gpus_used_peak = gpus_used_peak_;
    result.events = processed_;
    double first_submit = std::numeric_limits<double>::max();
    double last_finish = 0;
    double total_jct = 0;
    double useful_gpu_s = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const auto& job = jobs_[i];
      const auto& runtime = runtime_[i];
      SimJobResult row{job.id,
                       job.name,
                       job.num_gpu,
                       job.submit_s,
                       runtime.start_s,
                       runtime.finish_s,
                       runtime.finish_s - job.submit_s,
                       job.solo_duration_s(),
                       runtime.preemptions};
      first_submit = std::min(first_submit, job.submit_s);
      last_finish = std::max(last_finish, runtime.finish_s);
      total_jct += row.jct_s;
      useful_gpu_s += job.solo_duration_s() * job.num_gpu * job.utilization;
      result.jobs.push_back(row);
    }
    if (!jobs_.empty()) {
      result.avg_jct_s = total_jct / static_cast<double>(jobs_.size());
      result.makespan_s = last_finish - first_submit;
      if (result.makespan_s > 0) {
        result.gpu_utilization = useful_gpu_s / (config_.gpus * result.makespan_s);
      }
    }
    return result;
  }

  const std::vector<SimJob>& jobs_;
  const Policy& policy_;
  const SimConfig& config_;
  std::vector<Gpu> gpus_;
  std::vector<JobRuntime> runtime_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<size_t> pending_;
  std::map<int64_t, Run> runs_;
  std::map<std::pair<int, int>, int64_t> lane_runs_;
  int64_t next_sequence_ = 0;
  int64_t next_run_ = 0;
  int64_t processed_ = 0;
  int gpus_used_peak_ = 0;
};

}  // namespace

SimResult simulate(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config) {
  if (config.gpus < 1) throw std::invalid_argument("the cluster needs at least one GPU");
  return Engine(jobs, policy, config).run();
}

nlohmann::json sim_result_to_json(const SimResult& result) {
  nlohmann::json out{{"policy", result.policy},
                     {"lanes", result.lanes},
                     {"gpus", result.gpus},
                     {"avg_jct_s", result.avg_jct_s},
                     {"makespan_s", result.makespan_s},
                     {"gpu_utilization", result.gpu_utilization},
                     {"gpus_used_peak", result.gpus_used_peak},
                     {"events", result.events}};
  out["jobs"] = nlohmann::json::array();
  for (const auto& job : result.jobs) {
    out["jobs"].push_back({{"id", job.id},
                           {"name", job.name},
                           {"num_gpu", job.num_gpu},
                           {"submit_s", job.submit_s},
                           {"start_s", job.start_s},
                           {"finish_s", job.finish_s},
                           {"jct_s", job.jct_s},
                           {"solo_s", job.solo_s},
                           {"preemptions", job.preemptions}});
  }
  return out;
}

void write_sim_table(const SimResult& result, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line,
                "policy %s, lanes %s, %d GPUs: avg JCT %.1f s, makespan %.1f s, GPU utilization "
                "%.3f, peak GPUs used %d\n",
                result.policy.c_str(), result.lanes ? "on" : "off", result.gpus, result.avg_jct_s,
                result.makespan_s, result.gpu_utilization, result.gpus_used_peak);
  out << line;
  std::snprintf(line, sizeof line, "%-10s %5s %10s %10s %10s %10s %10s %6s\n", "JOB", "GPUS",
                "SUBMIT_S", "START_S", "FINISH_S", "JCT_S", "SOLO_S", "PREEMPT");
  out << line;
  for (const auto& job : result.jobs) {
    std::snprintf(line, sizeof line, "%-10s %5d %10.1f %10.1f %10.1f %10.1f %10.1f %6lld\n",
                  job.name.c_str(), job.num_gpu, job.submit_s, job.start_s, job.finish_s, job.jct_s,
                  job.solo_s, static_cast<long long>(job.preemptions));
    out << line;
  }
}

}  // namespace fleetscope::sharer
