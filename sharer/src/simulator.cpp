#include "fleetscope/sharer/simulator.h"

#include "fleetscope/sharer/mps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "fleetscope/sharer/lane_allocator.h"
#include "lane_runner.h"

namespace fleetscope::sharer {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Iterations a lane steps one by one before it reports back (bounds the work redone when the
// lane changes before its projected finish).
constexpr int64_t kStepBudget = 4096;

// kStarvation: a waiting multi-GPU job passes the starvation bound (the reservation is made at
// that moment, not at whatever event comes next).
enum class EventKind : uint8_t { kArrival, kLane, kStarvation };

struct Event {
  double time_s;
  int64_t sequence;  // ties resolve in creation order, so runs are deterministic
  EventKind kind;
  int64_t ref;      // job index (arrival) or slot index (lane)
  int64_t version;  // lane events: the slot's version when projected (older ones are stale)

  bool operator>(const Event& other) const {
    return time_s != other.time_s ? time_s > other.time_s : sequence > other.sequence;
  }
};

// The execution slot of one lane (or of a gang job spanning whole GPUs).
struct Slot {
  bool active = false;
  int gpu = -1;
  int lane_id = -1;
  bool gang = false;
  std::vector<int> gang_gpus;
  int resident = 0;
  double demand = 0;        // sum of the residents' utilization
  int64_t pinned_key = -1;  // plan replay: (gpu, lane) of a pinned lane
  std::optional<LaneRunner> runner;
  // The lane run ahead to its next finish (or step budget): adopted when that event comes unless
  // the lane changed before.
  std::optional<LaneRunner> projected;
  std::vector<LaneRunner::Finished> projected_finished;
  double projected_s = kInfinity;
  int64_t version = -1;
  bool touched = false;
};

struct GpuState {
  LaneAllocator allocator;
  bool gang_held = false;
  bool reserved = false;
  int jobs = 0;
  double lane_demand = 0;  // sum over lanes of min(1, lane demand)
  int64_t changed_seq = -1;
  bool demand_changed = false;             // lanes' speeds to re-evaluate
  double utilization_sum = 0;              // of its jobs (water-filling)
  std::unordered_map<int, int> lane_slot;  // lane id -> slot index
  std::vector<int> slots;                  // every slot on this GPU (pinned ones too)
  // What the indexes hold for this GPU (to erase the exact key).
  bool indexed = false;
  int index_jobs = 0;
  int64_t index_free = 0;
};

// A job's progress while it waits and once it finished; while resident its lane's runner holds it.
struct JobRuntime {
  JobState state;
  MemoryDemand memory;  // P, T, sigma (the allocator charges the context)
  int slot = -1;
  int gpu = -1;   // where it was placed (a gang job: its first GPU)
  int lane = -1;  // the allocator's lane id there
  double start_s = -1;
  double finish_s = 0;
  int64_t preemptions = 0;
  double paging_s = 0;
  std::map<int64_t, int64_t> step_counts;  // ns -> count (record_step_times)
  int64_t failed_seq = -2;  // release sequence of its last failed search; -2: never searched
  bool finished = false;
};

struct FailedDemand {
  MemoryDemand demand;
  int64_t guarded = 0;
  int64_t seq = 0;
};

// Nearest rank: the smallest step time at least 99 % of the steps do not exceed; 0 without steps.
double nearest_rank_p99_s(const std::map<int64_t, int64_t>& counts) {
  int64_t total = 0;
  for (const auto& [ns, count] : counts) total += count;
  if (total == 0) return 0;
  const auto rank = static_cast<int64_t>(std::ceil(0.99 * static_cast<double>(total)));
  int64_t seen = 0;
  for (const auto& [ns, count] : counts) {
    seen += count;
    if (seen >= rank) return static_cast<double>(ns) * 1e-9;
  }
  return static_cast<double>(counts.rbegin()->first) * 1e-9;
}

class Engine {
 public:
  Engine(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config)
      : jobs_(jobs), policy_(policy), config_(config) {
    gpus_.reserve(static_cast<size_t>(config.gpus));
    for (int g = 0; g < config.gpus; ++g) {
      gpus_.push_back(GpuState{LaneAllocator(memory_bytes(), config.memory)});
    }
    runtime_.resize(jobs.size());
    double total_iterations = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      validate(jobs[i]);
      total_iterations += static_cast<double>(jobs[i].iterations);
      auto& runtime = runtime_[i];
      runtime.state.job = &jobs[i];
      runtime.memory = jobs[i].memory;
      if (config_.memory.own_lane_gpu_bytes(runtime.memory) > memory_bytes()) {
        throw std::invalid_argument("job " + jobs[i].name +
                                    " needs more memory than one GPU has (with its CUDA context)");
      }
    }
    // Stepping every iteration is at most two events per iteration, plus the arrival.
    if (!config.fast_forward && 2 * total_iterations + static_cast<double>(jobs.size()) >
                                    static_cast<double>(config.max_events)) {
      throw std::invalid_argument("the trace needs " + std::to_string(total_iterations) +
                                  " iterations in all; the simulator stops at " +
                                  std::to_string(config.max_events) + " events");
    }
    for (int g = 0; g < config.gpus; ++g) index(g);
    for (size_t i = 0; i < jobs.size(); ++i) push(jobs[i].submit_s, EventKind::kArrival, i);
  }

  SimResult run() {
    while (!events_.empty()) {
      const double now = events_.top().time_s;
      if (now > config_.stop_at_s) break;
      now_ = now;
      while (!events_.empty() && events_.top().time_s == now) {
        const Event event = events_.top();
        events_.pop();
        if (event.kind == EventKind::kArrival) {
          ++processed_;
          arrive(static_cast<size_t>(event.ref));
          continue;
        }
        if (event.kind == EventKind::kStarvation) continue;  // reservation_pending() looks
        const auto slot = static_cast<size_t>(event.ref);
        if (!slots_[slot].active || slots_[slot].version != event.version) continue;  // stale
        ++processed_;
        bring(slot, now);
      }
      // Admission, then the speed of every lane whose GPU changed; a lane brought to `now` for
      // that may report a finish, which frees memory for another round.
      do {
        if (admission_needed_ || reservation_pending(now)) admit_waiting(now);
        refresh_speeds(now);
      } while (admission_needed_);
      for (size_t slot : touched_) {
        slots_[slot].touched = false;
        project(slot);
      }
      touched_.clear();
      gpus_used_peak_ = std::max(gpus_used_peak_, gpus_used_);
    }
    if (config_.stop_at_s == kInfinity && !pending_.empty()) {
      throw std::logic_error("simulation ended with jobs still waiting");
    }
    if (config_.stop_at_s != kInfinity) {
      // Plan replay: every lane's progress at the stop time.
      for (size_t slot = 0; slot < slots_.size(); ++slot) {
        if (slots_[slot].active) bring(slot, config_.stop_at_s);
      }
      for (const auto& slot : slots_) {
        if (!slot.active) continue;
        for (const auto& member : slot.runner->members()) absorb(member);
      }
    }
    return summarise();
  }

 private:
  void validate(const SimJob& job) const {
    const auto bad = [&](const std::string& what) {
      throw std::invalid_argument("job " + job.name + ": " + what);
    };
    if (!std::isfinite(job.submit_s) || job.submit_s < 0 || job.submit_s > kMaxSubmitSeconds) {
      bad("submit time must be finite and in [0, 1e12] s");
    }
    if (job.iterations < 1 || job.iterations > kMaxIterations) {
      bad("iterations must be in 1..1000000000");
    }
    if (!std::isfinite(job.iteration_s) || job.iteration_s <= 0 ||
        job.iteration_s > kMaxIterationSeconds) {
      bad("iteration time must be finite and in (0, 1e7] s");
    }
    if (!std::isfinite(job.iteration_p99_s) || job.iteration_p99_s < 0 ||
        job.iteration_p99_s > 50 * job.iteration_s) {
      // Two slow iterations in 100 keep the mean only while they fit in 100 iterations' time.
      bad("p99 iteration time must be finite and in [0, 50 x the iteration time]");
    }
    if (!(job.utilization > 0 && job.utilization <= 1)) bad("utilization must be in (0, 1]");
    if (job.memory.persistent_bytes < 0 || job.memory.ephemeral_peak_bytes < 0 ||
        std::isnan(job.memory.peak_stddev_bytes) || std::isinf(job.memory.peak_stddev_bytes)) {
      bad("memory must be non-negative and finite");
    }
    if (job.pinned_gpu >= config_.gpus || (job.pinned_gpu >= 0 && job.num_gpu != 1)) {
      bad("pinned to a GPU the cluster does not have");
    }
    if (job.num_gpu < 1 || job.num_gpu > config_.gpus) {
      bad("needs " + std::to_string(job.num_gpu) + " GPUs but the cluster has " +
          std::to_string(config_.gpus));
    }
  }

  void push(double time_s, EventKind kind, size_t ref) {
    events_.push(Event{time_s, next_sequence_++, kind, static_cast<int64_t>(ref), 0});
  }

  OrderKey admission_order(size_t job) const {
    return order_key(policy_.admission_key(runtime_[job].state), jobs_[job], job);
  }

  // ---- GPU indexes -------------------------------------------------------------------------

  void unindex(int g) {
    GpuState& gpu = gpus_[static_cast<size_t>(g)];
    if (!gpu.indexed) return;
    gpu.indexed = false;
    if (gpu.jobs > 0 || gpu.gang_held) --gpus_used_;
    if (gpu.gang_held) return;
    by_jobs_.erase({gpu.index_jobs, g});
    if (gpu.index_jobs == 0) {
      empty_.erase(g);
    } else {
      by_free_.erase({gpu.index_free, g});
    }
  }

  void index(int g) {
    GpuState& gpu = gpus_[static_cast<size_t>(g)];
    gpu.indexed = true;
    if (gpu.jobs > 0 || gpu.gang_held) ++gpus_used_;
    if (gpu.gang_held) return;
    gpu.index_jobs = gpu.jobs;
    gpu.index_free = gpu.allocator.free_bytes();
    by_jobs_.emplace(gpu.index_jobs, g);
    if (gpu.jobs == 0) {
      empty_.insert(g);
    } else {
      by_free_.emplace(gpu.index_free, g);
    }
  }

  void mark_changed(int g) {
    gpus_[static_cast<size_t>(g)].changed_seq = ++release_seq_;
    changed_log_.emplace_back(release_seq_, g);
    if (changed_log_.size() > 4 * gpus_.size() + 1024) {
      // Keep each GPU's latest change: "changed after s" stays exact for every s.
      std::vector<std::pair<int64_t, int>> latest;
      for (size_t i = 0; i < gpus_.size(); ++i) {
        if (gpus_[i].changed_seq >= 0)
          latest.emplace_back(gpus_[i].changed_seq, static_cast<int>(i));
      }
      std::sort(latest.begin(), latest.end());
      changed_log_ = std::move(latest);
    }
  }

  // ---- admission ---------------------------------------------------------------------------

  void arrive(size_t job) {
    pending_.insert(admission_order(job));
    admission_needed_ = true;
    if (jobs_[job].num_gpu == 1) return;
    pending_gang_.insert({jobs_[job].submit_s, job});
    const double bound = config_.starvation_bound_s;
    if (bound > 0 && !std::isinf(bound)) {
      double at = jobs_[job].submit_s + bound;
      while (!(at - jobs_[job].submit_s > bound)) at = std::nextafter(at, kInfinity);
      push(at, EventKind::kStarvation, job);
    }
  }

  // What a GPU's jobs may hold: its memory, or (paging to host) as good as unbounded.
  int64_t memory_bytes() const {
    return policy_.pages_to_host() ? int64_t{1} << 50 : config_.gpu_capacity_bytes;
  }

  AdmitOptions admit_options() const {
    AdmitOptions options;
    if (policy_.exclusive() || !config_.lanes || policy_.pages_to_host()) {
      options.max_lanes = 1;  // the lane grows as jobs join: the whole GPU less their contexts
    } else if (config_.mps_clients > 0) {
      options = mps_admit_options(config_.mps_clients);
    }
    return options;
  }

  bool usable(int g) const {
    const GpuState& gpu = gpus_[static_cast<size_t>(g)];
    if (gpu.gang_held || gpu.reserved) return false;
    return !policy_.exclusive() || gpu.jobs == 0;
  }

  bool fits(int g, const MemoryDemand& demand, const AdmitOptions& options) const {
    if (!usable(g)) return false;
    const GpuState& gpu = gpus_[static_cast<size_t>(g)];
    const int most = policy_.max_jobs_per_gpu();
    if (most > 0 && gpu.jobs >= most) return false;
    const double level = policy_.max_gpu_demand();
    if (level > 0 && gpu.jobs > 0 && gpu.utilization_sum + admitting_utilization_ > level + 1e-9) {
      return false;
    }
    ++probes_;
    return gpus_[static_cast<size_t>(g)].allocator.probe(demand, options).has_value();
  }

  // Lower is better: spreading policies prefer the GPU with the fewest jobs, consolidating ones
  // a GPU in use with the least free memory (best fit), exclusive ones the first empty GPU.
  std::pair<int64_t, int64_t> score(int g) const {
    const GpuState& gpu = gpus_[static_cast<size_t>(g)];
    if (policy_.consolidate()) {
      return {gpu.jobs == 0 ? 1 : 0, gpu.allocator.free_bytes()};
    }
    return {gpu.jobs, g};
  }

  int search_all(const MemoryDemand& demand, const AdmitOptions& options) const {
    if (policy_.exclusive()) {
      for (int g : empty_) {
        if (fits(g, demand, options)) return g;
      }
      return -1;
    }
    if (policy_.consolidate()) {
      for (const auto& [free, g] : by_free_) {
        if (fits(g, demand, options)) return g;
      }
      for (int g : empty_) {
        if (fits(g, demand, options)) return g;
      }
      return -1;
    }
    for (const auto& [count, g] : by_jobs_) {
      if (fits(g, demand, options)) return g;
    }
    return -1;
  }

  // GPUs that freed memory after `since`, best first.
  int search_changed(int64_t since, const MemoryDemand& demand, const AdmitOptions& options) const {
    int best = -1;
    std::pair<int64_t, int64_t> best_score{};
    for (auto it = changed_log_.rbegin(); it != changed_log_.rend() && it->first > since; ++it) {
      const int g = it->second;
      if (gpus_[static_cast<size_t>(g)].changed_seq != it->first) continue;  // a later entry
      if (!fits(g, demand, options)) continue;
      const auto candidate = score(g);
      if (best < 0 || candidate < best_score || (candidate == best_score && g < best)) {
        best = g;
        best_score = candidate;
      }
    }
    return best;
  }

  static bool dominates(const MemoryDemand& a, int64_t a_guarded, const FailedDemand& b) {
    return a.persistent_bytes >= b.demand.persistent_bytes &&
           a.ephemeral_peak_bytes >= b.demand.ephemeral_peak_bytes && a_guarded >= b.guarded;
  }

  bool admit_pinned(size_t job) {
    const int g = jobs_[job].pinned_gpu;
    const int64_t key =
        (static_cast<int64_t>(g) << 32) | static_cast<uint32_t>(jobs_[job].pinned_lane);
    unindex(g);
    auto found = pinned_slots_.find(key);
    int slot_index;
    if (found == pinned_slots_.end()) {
      slot_index = new_slot(g);
      slots_[static_cast<size_t>(slot_index)].pinned_key = key;
      pinned_slots_[key] = slot_index;
    } else {
      slot_index = found->second;
    }
    join_slot(job, g, slot_index);
    return true;
  }

  // The job enters the slot (lane) on GPU g, which the caller has unindexed: the GPU's lane demand
  // counts each slot's demand up to one GPU, then the GPU is indexed again and the job made ready.
  void join_slot(size_t job, int g, int slot_index) {
    GpuState& gpu = gpus_[static_cast<size_t>(g)];
    Slot& slot = slots_[static_cast<size_t>(slot_index)];
    ++slot.resident;  // before bring(): the lane stays even if a resident finishes right now
    ++gpu.jobs;
    bring(static_cast<size_t>(slot_index), now_);
    gpu.lane_demand -= std::min(1.0, slot.demand);
    slot.demand += jobs_[job].utilization;
    gpu.utilization_sum += jobs_[job].utilization;
    gpu.lane_demand += std::min(1.0, slot.demand);
    gpu.demand_changed = true;
    demand_changed_.push_back(g);
    index(g);
    enter(job, static_cast<size_t>(slot_index));
  }

  bool try_single(size_t job) {
    if (jobs_[job].pinned_gpu >= 0) return admit_pinned(job);
    auto& runtime = runtime_[job];
    const AdmitOptions options = admit_options();
    const int64_t guarded = config_.memory.margin.guarded_ephemeral(runtime.memory);
    int64_t since = runtime.failed_seq;
    admitting_utilization_ = jobs_[job].utilization;
    // Another job's failure says nothing when admission also counts utilization.
    if (since == -2 && !(policy_.max_gpu_demand() > 0)) {
      // A job at least as large as one that failed everywhere at sequence s fails on every GPU
      // unchanged since s.
      for (const auto& failed : failed_cache_) {
        if (dominates(runtime.memory, guarded, failed)) since = std::max(since, failed.seq);
      }
    }
    const int g = since == -2 ? search_all(runtime.memory, options)
                              : search_changed(since, runtime.memory, options);
    if (g < 0) {
      runtime.failed_seq = release_seq_;
      if (failed_cache_.size() >= 8) failed_cache_.erase(failed_cache_.begin());
      failed_cache_.push_back(FailedDemand{runtime.memory, guarded, release_seq_});
      return false;
    }
    GpuState& gpu = gpus_[static_cast<size_t>(g)];
    unindex(g);
    auto placement = gpu.allocator.admit(static_cast<int64_t>(job), runtime.memory, options);
    int slot_index;
    auto found = gpu.lane_slot.find(placement->lane_id);
    if (found == gpu.lane_slot.end()) {
      slot_index = new_slot(g);
      slots_[static_cast<size_t>(slot_index)].lane_id = placement->lane_id;
      gpu.lane_slot[placement->lane_id] = slot_index;
    } else {
      slot_index = found->second;
    }
    join_slot(job, g, slot_index);
    return true;
  }

  bool try_gang(size_t job, const std::vector<int>* reserved) {
    std::vector<int> chosen;
    const int need = jobs_[job].num_gpu;
    if (reserved) {
      for (int g : *reserved) {
        if (gpus_[static_cast<size_t>(g)].jobs != 0) return false;
      }
      chosen = *reserved;
    } else {
      for (int g : empty_) {
        if (static_cast<int>(chosen.size()) == need) break;
        if (!gpus_[static_cast<size_t>(g)].reserved) chosen.push_back(g);
      }
      if (static_cast<int>(chosen.size()) < need) return false;
    }
    const int slot_index = new_slot(-1);
    for (int g : chosen) {
      unindex(g);
      gpus_[static_cast<size_t>(g)].gang_held = true;
      gpus_[static_cast<size_t>(g)].reserved = false;
      index(g);
    }
    Slot& slot = slots_[static_cast<size_t>(slot_index)];
    slot.gang = true;
    slot.gang_gpus = chosen;
    slot.resident = 1;
    enter(job, static_cast<size_t>(slot_index));
    return true;
  }

  // Aging: the oldest waiting multi-GPU job that waited past the bound reserves the GPUs with
  // the fewest jobs; they take no new job until it starts there.
  bool reservation_pending(double now) const {
    if (reserved_job_ >= 0 || pending_gang_.empty()) return false;
    const double bound = config_.starvation_bound_s;
    if (!(bound > 0) || std::isinf(bound)) return false;
    return now - pending_gang_.begin()->first > bound;
  }

  void reserve(double now) {
    if (!reservation_pending(now)) return;
    const size_t job = pending_gang_.begin()->second;
    std::vector<int> chosen;
    for (const auto& [count, g] : by_jobs_) {
      if (static_cast<int>(chosen.size()) == jobs_[job].num_gpu) break;
      chosen.push_back(g);
    }
    if (static_cast<int>(chosen.size()) < jobs_[job].num_gpu) return;
    for (int g : chosen) gpus_[static_cast<size_t>(g)].reserved = true;
    reserved_job_ = static_cast<int64_t>(job);
    reserved_gpus_ = std::move(chosen);
  }

  void admit_waiting(double now) {
    admission_needed_ = false;
    // When the reserved job starts, the next one past the bound reserves at once: at this
    // instant, not at whatever event comes next (which made the choice of GPUs depend on how
    // often the lanes report, and the closed form differ from stepping).
    for (reserve(now); reserved_job_ >= 0; reserve(now)) {
      const auto job = static_cast<size_t>(reserved_job_);
      if (!try_gang(job, &reserved_gpus_)) break;
      pending_.erase(admission_order(job));
      pending_gang_.erase({jobs_[job].submit_s, job});
      reserved_job_ = -1;
      reserved_gpus_.clear();
    }
    int examined = 0;
    for (auto it = pending_.begin(); it != pending_.end() && examined < config_.backfill_window;) {
      const size_t job = it->job;
      ++examined;
      if (static_cast<int64_t>(job) == reserved_job_) {
        ++it;
        continue;
      }
      const bool admitted = jobs_[job].num_gpu > 1 ? try_gang(job, nullptr) : try_single(job);
      if (admitted) {
        if (jobs_[job].num_gpu > 1) pending_gang_.erase({jobs_[job].submit_s, job});
        it = pending_.erase(it);
      } else {
        if (!policy_.backfill()) break;
        ++it;
      }
    }
  }

  int new_slot(int gpu) {
    int index;
    if (!free_slots_.empty()) {
      index = free_slots_.back();
      free_slots_.pop_back();
    } else {
      index = static_cast<int>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[static_cast<size_t>(index)];
    const int64_t version = slot.version;
    slot = Slot{};
    slot.version = version;
    slot.active = true;
    slot.gpu = gpu;
    HostPaging paging;
    if (policy_.pages_to_host() && gpu >= 0 && std::isfinite(config_.host_link_bytes_per_s)) {
      paging = HostPaging{true, config_.gpu_capacity_bytes, config_.memory.context_bytes,
                          config_.host_link_bytes_per_s};
    }
    slot.runner.emplace(policy_, config_.switch_cost_s, config_.fast_forward, paging,
                        config_.record_step_times);
    if (gpu >= 0) gpus_[static_cast<size_t>(gpu)].slots.push_back(index);
    return index;
  }

  void free_slot(size_t slot_index) {
    Slot& slot = slots_[slot_index];
    slot.active = false;
    slot.runner.reset();
    slot.projected.reset();
    slot.projected_finished.clear();
    if (slot.gpu >= 0)
      std::erase(gpus_[static_cast<size_t>(slot.gpu)].slots, static_cast<int>(slot_index));
    free_slots_.push_back(static_cast<int>(slot_index));
  }

  // ---- lanes -------------------------------------------------------------------------------

  void touch(size_t slot_index) {
    Slot& slot = slots_[slot_index];
    ++slot.version;  // whatever was projected for it is stale now
    slot.projected.reset();
    slot.projected_finished.clear();
    if (!slot.touched) {
      slot.touched = true;
      touched_.push_back(slot_index);
    }
  }

  // The job joins its lane at now_ (the lane was brought there).
  void enter(size_t job, size_t slot_index) {
    auto& runtime = runtime_[job];
    runtime.slot = static_cast<int>(slot_index);
    Slot& slot = slots_[slot_index];
    runtime.gpu = slot.gang && !slot.gang_gpus.empty() ? slot.gang_gpus.front() : slot.gpu;
    runtime.lane = slot.lane_id;
    slot.runner->add(job, runtime.state, runtime.start_s, runtime.preemptions, now_,
                     runtime.paging_s);
    touch(slot_index);
  }

  // Brings the lane to `now`: every event of it up to `now` happens, the finishes among them are
  // carried out, and the lane is marked for a new projection.
  void bring(size_t slot_index, double now) {
    Slot& slot = slots_[slot_index];
    std::vector<LaneRunner::Finished> finished;
    if (slot.projected && slot.projected_s == now) {
      slot.runner = std::move(slot.projected);
      finished = std::move(slot.projected_finished);
    } else {
      const int64_t before = slot.runner->stepped_iterations();
      slot.runner->advance(now, finished);
      stepped_ += slot.runner->stepped_iterations() - before;
    }
    touch(slot_index);
    for (auto& done : finished) finish(slot_index, done);
  }

  // Runs a copy of the lane ahead to its next finish (or its step budget) and schedules that.
  void project(size_t slot_index) {
    Slot& slot = slots_[slot_index];
    if (!slot.active || slot.runner->empty()) return;
    slot.projected = *slot.runner;
    slot.projected_finished.clear();
    const int64_t before = slot.projected->stepped_iterations();
    slot.projected_s =
        slot.projected->advance_to_first_finish(slot.projected_finished, kStepBudget);
    stepped_ += slot.projected->stepped_iterations() - before;
    if (slot.projected_s == kInfinity) throw std::logic_error("a lane with jobs makes no progress");
    events_.push(Event{slot.projected_s, next_sequence_++, EventKind::kLane,
                       static_cast<int64_t>(slot_index), slot.version});
  }

  // Lanes of GPUs whose lane demands changed run at their new speed from `now` on.
  void refresh_speeds(double now) {
    while (!demand_changed_.empty()) {
      const int g = demand_changed_.back();
      demand_changed_.pop_back();
      GpuState& gpu = gpus_[static_cast<size_t>(g)];
      if (!gpu.demand_changed) continue;
      gpu.demand_changed = false;
      const std::vector<int> slots = gpu.slots;  // bring() may free a slot
      std::vector<double> demands;
      demands.reserve(slots.size());
      // The jobs' workloads, for the measured pair terms (none in the model: not gathered).
      std::vector<std::vector<std::string>> workloads;
      const bool pair_terms = config_.interference.has_workload_terms();
      for (int index : slots) {
        const Slot& slot = slots_[static_cast<size_t>(index)];
        demands.push_back(std::min(1.0, std::max(0.0, slot.demand)));
        if (!pair_terms) continue;
        workloads.emplace_back();
        if (!slot.active || !slot.runner) continue;
        for (const auto& member : slot.runner->members()) {
          workloads.back().push_back(jobs_[member.job].workload);
        }
      }
      for (size_t i = 0; i < slots.size(); ++i) {
        const auto slot_index = static_cast<size_t>(slots[i]);
        if (!slots_[slot_index].active || slots_[slot_index].gpu != g) continue;
        // The planner's definition (InterferenceModel::lane_factor): one model in one place.
        const double factor = config_.interference.lane_factor(i, demands, workloads);
        if (factor == slots_[slot_index].runner->factor()) continue;
        bring(slot_index, now);
        if (slots_[slot_index].active) slots_[slot_index].runner->set_factor(factor, now);
      }
    }
  }

  void absorb(const LaneRunner::Member& member) {
    auto& runtime = runtime_[member.job];
    runtime.state = member.state;
    runtime.start_s = member.start_s;
    runtime.preemptions = member.preemptions;
    runtime.paging_s = member.paging_s;
    runtime.step_counts = member.step_counts;
  }

  void finish(size_t slot_index, const LaneRunner::Finished& done) {
    const size_t job = done.member.job;
    auto& runtime = runtime_[job];
    absorb(done.member);
    runtime.finished = true;
    runtime.finish_s = done.time_s;
    Slot& slot = slots_[slot_index];
    admission_needed_ = true;
    if (slot.gang) {
      for (int g : slot.gang_gpus) {
        unindex(g);
        gpus_[static_cast<size_t>(g)].gang_held = false;
        index(g);
        mark_changed(g);
      }
      free_slot(slot_index);
      return;
    }
    const int g = slot.gpu;
    GpuState& gpu = gpus_[static_cast<size_t>(g)];
    unindex(g);
    gpu.allocator.release(static_cast<int64_t>(job));
    gpu.lane_demand -= std::min(1.0, slot.demand);
    slot.demand -= jobs_[job].utilization;
    gpu.utilization_sum = gpu.jobs > 1 ? gpu.utilization_sum - jobs_[job].utilization : 0;
    --slot.resident;
    --gpu.jobs;
    gpu.demand_changed = true;
    demand_changed_.push_back(g);
    if (slot.resident == 0) {
      if (slot.pinned_key >= 0) {
        pinned_slots_.erase(slot.pinned_key);
      } else {
        gpu.lane_slot.erase(slot.lane_id);
      }
      free_slot(slot_index);
      if (gpu.jobs == 0) gpu.lane_demand = 0;  // no drift from repeated float updates
    } else {
      gpu.lane_demand += std::min(1.0, std::max(0.0, slot.demand));
    }
    index(g);
    mark_changed(g);
  }

  // ---- results -----------------------------------------------------------------------------

  SimResult summarise() const {
    SimResult result;
    result.policy = std::string(policy_.name());
    result.lanes = config_.lanes && !policy_.exclusive();
    result.mps_clients = config_.mps_clients;
    result.gpus = config_.gpus;
    result.gpus_used_peak = gpus_used_peak_;
    result.events = processed_;
    result.placement_probes = probes_;
    result.stepped_iterations = stepped_;
    const bool stopped = config_.stop_at_s != std::numeric_limits<double>::infinity();
    double first_submit = std::numeric_limits<double>::max();
    double last_finish = 0;
    double total_jct = 0;
    double useful_gpu_s = 0;
    size_t finished = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      const auto& job = jobs_[i];
      const auto& runtime = runtime_[i];
      SimJobResult row;
      row.id = job.id;
      row.name = job.name;
      row.num_gpu = job.num_gpu;
      row.submit_s = job.submit_s;
      row.start_s = runtime.start_s;
      row.gpu = runtime.gpu;
      row.lane = runtime.lane;
      row.finished = runtime.finished;
      row.finish_s = runtime.finished ? runtime.finish_s : 0;
      row.jct_s = runtime.finished ? runtime.finish_s - job.submit_s : 0;
      row.solo_s = job.solo_duration_s();
      row.preemptions = runtime.preemptions;
      row.paging_s = runtime.paging_s;
      row.p99_step_s = nearest_rank_p99_s(runtime.step_counts);
      row.done_iterations = runtime.state.done_iterations;
      row.wait_s = runtime.start_s >= 0 ? runtime.start_s - job.submit_s : 0;
      const double end = runtime.finished ? runtime.finish_s : config_.stop_at_s;
      if (row.done_iterations > 0 && runtime.start_s >= 0) {
        row.slowdown =
            (end - runtime.start_s) / (static_cast<double>(row.done_iterations) * job.iteration_s);
      }
      first_submit = std::min(first_submit, job.submit_s);
      if (runtime.finished) {
        last_finish = std::max(last_finish, runtime.finish_s);
        total_jct += row.jct_s;
        ++finished;
      }
      useful_gpu_s += static_cast<double>(row.done_iterations) * job.iteration_s * job.num_gpu *
                      job.utilization;
      auto& max_wait = job.num_gpu > 1 ? result.max_wait_multi_gpu_s : result.max_wait_single_gpu_s;
      max_wait = std::max(max_wait, row.wait_s);
      result.jobs.push_back(row);
    }
    if (finished > 0) result.avg_jct_s = total_jct / static_cast<double>(finished);
    if (!jobs_.empty()) {
      result.makespan_s = (stopped ? config_.stop_at_s : last_finish) - first_submit;
      if (result.makespan_s > 0) {
        result.gpu_utilization = useful_gpu_s / (config_.gpus * result.makespan_s);
      }
    }
    return result;
  }

  const std::vector<SimJob>& jobs_;
  const Policy& policy_;
  const SimConfig& config_;
  std::vector<GpuState> gpus_;
  std::vector<JobRuntime> runtime_;
  std::vector<Slot> slots_;
  std::vector<int> free_slots_;
  std::unordered_map<int64_t, int> pinned_slots_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::set<OrderKey> pending_;
  std::set<std::pair<double, size_t>> pending_gang_;
  std::set<std::pair<int, int>> by_jobs_;      // (jobs, gpu) of GPUs not held by a gang job
  std::set<std::pair<int64_t, int>> by_free_;  // (free bytes, gpu) of GPUs in use
  std::set<int> empty_;                        // GPUs without jobs
  std::vector<std::pair<int64_t, int>> changed_log_;
  std::vector<FailedDemand> failed_cache_;
  std::vector<size_t> touched_;  // lanes to project again after this instant
  std::vector<int> demand_changed_;
  double now_ = 0;
  double admitting_utilization_ = 0;  // of the job being placed (water-filling)
  int64_t stepped_ = 0;
  std::vector<int> reserved_gpus_;
  int64_t reserved_job_ = -1;
  int64_t release_seq_ = 0;
  bool admission_needed_ = false;
  int64_t next_sequence_ = 0;
  int64_t processed_ = 0;
  mutable int64_t probes_ = 0;
  int gpus_used_ = 0;
  int gpus_used_peak_ = 0;
};

}  // namespace

void validate_config(const SimConfig& config) {
  const auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (config.gpus < 1 || config.gpus > kMaxGpus) bad("the cluster needs 1..100000 GPUs");
  if (config.gpu_capacity_bytes <= 0 || config.gpu_capacity_bytes > (int64_t{1} << 50)) {
    bad("GPU memory must be in (0, 1 PiB]");
  }
  if (!std::isfinite(config.switch_cost_s) || config.switch_cost_s < 0 ||
      config.switch_cost_s > 3600) {
    bad("switch cost must be finite and in [0, 3600] s");
  }
  if (!(config.host_link_bytes_per_s > 0)) bad("host link bandwidth must be > 0 bytes/s");
  if (config.memory.context_bytes < 0 || config.memory.context_bytes >= config.gpu_capacity_bytes) {
    bad("CUDA context memory must be in [0, GPU memory)");
  }
  config.memory.validate();
  if (!std::isfinite(config.interference.alpha) || config.interference.alpha < 0 ||
      config.interference.alpha > 100) {
    bad("interference alpha must be finite and in [0, 100]");
  }
  if (std::isnan(config.starvation_bound_s)) bad("starvation bound must be a number");
  if (config.backfill_window < 1) bad("backfill window must be >= 1");
  if (std::isnan(config.stop_at_s) || config.stop_at_s < 0) bad("stop time must be >= 0");
  if (config.max_events < 1) bad("event limit must be >= 1");
  if (config.mps_clients < 0 || config.mps_clients > 4096) bad("MPS clients must be in 0..4096");
  if (config.mps_clients > 0 && !config.lanes) {
    bad("the MPS model runs clients in parallel: it needs lanes on");
  }
}

SimResult simulate(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config) {
  validate_config(config);
  return Engine(jobs, policy, config).run();
}

nlohmann::json sim_result_to_json(const SimResult& result) {
  nlohmann::json out{{"policy", result.policy},
                     {"lanes", result.lanes},
                     {"mps_clients", result.mps_clients},
                     {"gpus", result.gpus},
                     {"avg_jct_s", result.avg_jct_s},
                     {"makespan_s", result.makespan_s},
                     {"gpu_utilization", result.gpu_utilization},
                     {"gpus_used_peak", result.gpus_used_peak},
                     {"events", result.events},
                     {"max_wait_multi_gpu_s", result.max_wait_multi_gpu_s},
                     {"max_wait_single_gpu_s", result.max_wait_single_gpu_s}};
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
                           {"wait_s", job.wait_s},
                           {"slowdown", job.slowdown},
                           {"done_iterations", job.done_iterations},
                           {"finished", job.finished},
                           {"preemptions", job.preemptions},
                           {"paging_s", job.paging_s},
                           {"p99_step_s", job.p99_step_s}});
  }
  return out;
}

void write_sim_table(const SimResult& result, std::ostream& out) {
  const std::string sharing =
      result.mps_clients > 0
          ? "off (MPS model, at most " + std::to_string(result.mps_clients) + " clients per GPU)"
          : (result.lanes ? "on" : "off");
  char line[400];
  std::snprintf(line, sizeof line,
                "policy %s, lanes %s, %d GPUs: avg JCT %.1f s, makespan %.1f s, GPU utilization "
                "%.3f, peak GPUs used %d, longest wait %.1f s (multi-GPU) / %.1f s (1 GPU)\n",
                result.policy.c_str(), sharing.c_str(), result.gpus, result.avg_jct_s,
                result.makespan_s, result.gpu_utilization, result.gpus_used_peak,
                result.max_wait_multi_gpu_s, result.max_wait_single_gpu_s);
  out << line;
  double paging_s = 0;
  for (const auto& job : result.jobs) paging_s += job.paging_s;
  if (paging_s > 0) {
    std::snprintf(line, sizeof line, "paging to host: %.1f s of GPU phases in all\n", paging_s);
    out << line;
  }
  const bool steps = std::any_of(result.jobs.begin(), result.jobs.end(),
                                 [](const SimJobResult& job) { return job.p99_step_s > 0; });
  std::snprintf(line, sizeof line, "%-10s %5s %10s %10s %10s %10s %10s %6s%s\n", "JOB", "GPUS",
                "SUBMIT_S", "START_S", "FINISH_S", "JCT_S", "SOLO_S", "PREEMPT",
                steps ? "  P99_STEP_S" : "");
  out << line;
  for (const auto& job : result.jobs) {
    std::snprintf(line, sizeof line, "%-10s %5d %10.1f %10.1f %10.1f %10.1f %10.1f %6lld",
                  job.name.c_str(), job.num_gpu, job.submit_s, job.start_s, job.finish_s, job.jct_s,
                  job.solo_s, static_cast<long long>(job.preemptions));
    out << line;
    if (steps) {
      std::snprintf(line, sizeof line, "  %10.3f", job.p99_step_s);
      out << line;
    }
    out << "\n";
  }
}

}  // namespace fleetscope::sharer
