#pragma once
// Trace-driven discrete-event simulator of a GPU cluster running a sharing policy.
//
// Events are job arrivals and iteration ends. Each lane runs one iteration at a time and, at every
// iteration boundary, asks the policy which of its jobs goes next (switching jobs costs
// `switch_cost_s`). Lanes of one GPU run in parallel and slow each other down according to the
// interference model, evaluated when an iteration starts. Multi-GPU jobs are gang-scheduled on
// whole, otherwise empty GPUs and are not preempted (Salus shares single-GPU jobs only).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/safety.h"
#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

struct SimConfig {
  int gpus = 1;
  int64_t gpu_capacity_bytes = 16 * kGiB;  // P100, the GPU the Salus profiles were measured on
  bool lanes = true;                       // false: the whole GPU is one lane (time slicing only)
  double switch_cost_s = 0.005;
  SafetyMargin margin;
  InterferenceModel interference;
};

struct SimJobResult {
  int64_t id = 0;
  std::string name;
  int num_gpu = 1;
  double submit_s = 0;
  double start_s = 0;
  double finish_s = 0;
  double jct_s = 0;
  double solo_s = 0;  // iterations x iteration time alone
  int64_t preemptions = 0;
};

struct SimResult {
  std::string policy;
  bool lanes = true;
  int gpus = 0;
  double avg_jct_s = 0;
  double makespan_s = 0;
  // Useful work (solo GPU-seconds x utilization) over GPU-seconds available during the makespan.
  double gpu_utilization = 0;
  int gpus_used_peak = 0;
  int64_t events = 0;
  std::vector<SimJobResult> jobs;  // in input order
};

// Throws std::invalid_argument when a job can never run (too many GPUs, too much memory).
SimResult simulate(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config);

nlohmann::json sim_result_to_json(const SimResult& result);
void write_sim_table(const SimResult& result, std::ostream& out);

}  // namespace fleetscope::sharer
