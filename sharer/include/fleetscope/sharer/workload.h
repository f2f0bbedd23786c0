#pragma once
// Job traces for the simulator: Salus workload profiles and the Tiresias job-trace format.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/sharer/safety.h"

namespace fleetscope::sharer {

// One (model, batch size) of the Salus workload list (TensorFlow CNN training alone on a P100).
struct WorkloadProfile {
  std::string model;
  int batch_size = 0;
  // Per-iteration time and fixed start-up cost, separated by comparing the shortest and the longest
  // run: iteration_s = (jct_long - jct_short) / (iterations_long - iterations_short).
  double iteration_s = 0;
  double startup_s = 0;
  int64_t peak_bytes = 0;
  // Peak memory is linear in the batch size: peak(b) = P + b * a, fitted by least squares over the
  // model's batch sizes. The intercept (weights, gradients, optimizer state, workspace: memory
  // that does not scale with the batch) is P; the rest of the peak, the activations, is T.
  int64_t persistent_bytes = 0;
  int64_t ephemeral_bytes = 0;
};

struct ProfileTable {
  std::vector<WorkloadProfile> profiles;

  // The profile of `model` whose iteration time is closest to `iteration_s`; null if the model
  // is unknown.
  const WorkloadProfile* closest(const std::string& model, double iteration_s) const;
  const WorkloadProfile* find(const std::string& model, int batch_size) const;
};

// Reads salus_workloads.csv (no header: name_bs_duration, jct_s, peak_mb, iterations, command).
// Throws std::runtime_error naming the file and line (an empty file is an error of this file).
ProfileTable load_salus_profiles(const std::string& path);
ProfileTable parse_salus_profiles(std::string_view text, const std::string& source);

// Limits on what a job trace may ask for: beyond them a job is impossible (or would keep the
// simulator busy for ever) and is rejected with its file and line.
inline constexpr int kMaxGpus = 100000;                // cluster and per-job GPU count
inline constexpr int64_t kMaxIterations = 1000000000;  // per job
inline constexpr double kMaxSubmitSeconds = 1e12;      // about 31,700 years
inline constexpr double kMaxIterationSeconds = 1e7;    // about 116 days per iteration

struct SimJob {
  int64_t id = 0;
  std::string name;
  std::string model;
  int batch_size = 0;
  double submit_s = 0;
  int64_t iterations = 1;
  double iteration_s = 1;  // alone on a GPU
  // The p99 step time alone (the analyzer's iteration_p99); above iteration_s, 2 of every 100
  // iterations take it and the other 98 are shortened so the mean stays iteration_s (then the
  // nearest-rank p99 of its steps alone is exactly this). 0: every iteration takes iteration_s.
  double iteration_p99_s = 0;
  int num_gpu = 1;
  MemoryDemand memory;
  double utilization = 1.0;  // share of an iteration the GPU is busy (1: compute-bound)
  int priority = 0;          // higher runs first under the priority policy
  // The workload name a calibration's pair terms use ("measured+neighbour": the planner's
  // workload=NAME label; a trace's optional `workload` column); "" unnamed (global alpha).
  std::string workload;
  // Plan replay: place the job on this GPU index and lane as a plan says (no placement search;
  // the plan checked the safety condition). -1: the simulator places the job.
  int pinned_gpu = -1;
  int pinned_lane = -1;

  double solo_duration_s() const { return static_cast<double>(iterations) * iteration_s; }
  bool steady() const { return !(iteration_p99_s > iteration_s); }
  // The duration alone of iteration `index` (0-based): iteration_s, or the tail pattern above
  // (iterations 49 and 99 of every 100 are the slow ones).
  double iteration_time_s(int64_t index) const;
};

// Reads a Tiresias-format trace (job_id,num_gpu,submit_time,iterations,model_name,duration,...)
// and attaches Salus profiles: the batch size is the one whose iteration time best matches
// duration / iterations unless a batch_size column says otherwise. Optional columns:
// batch_size, priority, utilization, workload. A job asking for more than `max_gpus_per_job`
// GPUs (the simulated cluster's size) is an input error at its row.
std::vector<SimJob> load_tiresias_jobs(const std::string& path, const ProfileTable& profiles,
                                       int max_gpus_per_job = kMaxGpus);
std::vector<SimJob> parse_tiresias_jobs(std::string_view text, const std::string& source,
                                        const ProfileTable& profiles,
                                        int max_gpus_per_job = kMaxGpus);

struct Pod;
// Alibaba pods as simulator jobs (the scale benchmark): a pod runs from creation to deletion, asks
// for gpu_milli/1000 of a GPU's compute (its utilization) and the same share of `gpu_capacity`
// bytes as persistent memory. Pods have no iterations, so each gets `quanta` scheduling quanta
// of (deletion - creation) / quanta seconds (at least 1 s): the granularity at which a lane may
// switch jobs. CPU-only pods are not in `pods` (load_alibaba_pods skips them).
std::vector<SimJob> jobs_from_pods(const std::vector<Pod>& pods, int64_t gpu_capacity_bytes,
                                   int quanta = 20);

// Alibaba-style training jobs (the simulator's scale benchmark): `count` jobs from the GPU pods,
// repeated as needed, copy k of pod i arriving at creation_i / 1000 + 7 k s (the fleet is
// oversubscribed and a queue forms). Each pod keeps its GPU count, its gpu_milli share as the
// utilization and the same share of `gpu_capacity_bytes` as persistent memory, and becomes a
// training job with the iteration time of Salus profile (i mod profiles) running
// min(lifetime, max_duration_s) seconds alone: iterations = that / the iteration time (at least 1).
// Unlike jobs_from_pods, the simulator meets every real iteration.
std::vector<SimJob> training_jobs_from_pods(const std::vector<Pod>& pods,
                                            const ProfileTable& profiles, size_t count,
                                            int64_t gpu_capacity_bytes,
                                            double max_duration_s = 1800);

}  // namespace fleetscope::sharer
