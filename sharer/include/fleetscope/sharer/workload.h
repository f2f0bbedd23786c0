#pragma once
// Job traces for the simulator: Salus workload profiles and the Tiresias job-trace format.

#include <cstdint>
#include <string>
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
ProfileTable load_salus_profiles(const std::string& path);

struct SimJob {
  int64_t id = 0;
  std::string name;
  std::string model;
  int batch_size = 0;
  double submit_s = 0;
  int64_t iterations = 1;
  double iteration_s = 1;  // alone on a GPU
  int num_gpu = 1;
  MemoryDemand memory;
  double utilization = 1.0;  // share of an iteration the GPU is busy (1: compute-bound)
  int priority = 0;          // higher runs first under the priority policy

  double solo_duration_s() const { return static_cast<double>(iterations) * iteration_s; }
};

// Reads a Tiresias-format trace (job_id,num_gpu,submit_time,iterations,model_name,duration,...)
// and attaches Salus profiles: the batch size is the one whose iteration time best matches
// duration / iterations unless a batch_size column says otherwise. Optional columns:
// batch_size, priority, utilization.
std::vector<SimJob> load_tiresias_jobs(const std::string& path, const ProfileTable& profiles);

}  // namespace fleetscope::sharer
