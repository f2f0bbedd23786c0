#pragma once
// Trace-driven discrete-event simulator of a GPU cluster running a sharing policy, with Salus's
// semantics (Yu & Chowdhury, MLSys'20): a lane runs one iteration at a time and, at every
// iteration boundary, the policy picks which of its jobs goes next (preemption happens there;
// switching jobs costs `switch_cost_s`); lanes of one GPU run in parallel and slow each other
// down by the interference model. An iteration is a GPU phase (utilization x iteration time) that
// holds the lane followed by a host phase that does not, so jobs sharing a lane overlap their host
// phases with each other's GPU phases, as the planner assumes. Contention stretches GPU phases
// only, and a lane's factor is re-evaluated the moment its GPU's lanes change (a GPU phase in
// flight does the work it has left at the new speed). Multi-GPU jobs are gang-scheduled on whole,
// otherwise empty GPUs and are not preempted (Salus shares single-GPU jobs only); one that waits
// longer than `starvation_bound_s` reserves GPUs, which take no new jobs until it runs.
//
// Cost: nothing outside a lane sees its iterations, only its jobs' finishes, so each lane is run
// ahead on its own to its next finish (lane_runner.h) and the cluster's event queue holds
// arrivals and those finishes. A lane whose jobs and speed do not change advances in closed form
// (one job: n iterations at once; several under SRTF or round robin: whole repeating periods);
// FAIR and priority lanes with several jobs are stepped inside the lane. Admission is decided
// only when a job arrives or finishes, lanes pick their next job by key, GPUs are found through
// ordered indexes, and a waiting job is re-tried only on GPUs that freed memory since it last
// failed. bench/sharer/sim_scale_bench.cpp, docs/benchmarks.md.

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/memory_model.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

struct SimConfig {
  int gpus = 1;
  int64_t gpu_capacity_bytes = 16 * kGiB;  // P100, the GPU the Salus profiles were measured on
  bool lanes = true;                       // false: one lane per GPU (time slicing only)
  double switch_cost_s = 0.005;
  // Host link of a policy that pages memory to host (salus-preempt): bytes per second each way.
  // Default: PCIe 3.0 x16, 8 GT/s x 16 lanes x 128/130 encoding = 15.75 GB/s (PCI Express Base
  // Specification 3.0), the link of Salus's P100 testbed; a peak, so paging is charged at least
  // the time it takes. Infinity: paging is free.
  double host_link_bytes_per_s = 15.75e9;
  // The memory model (memory_model.h): margin, and the CUDA context every job's process holds
  // on its GPU outside its lane (default: the 300 MiB Salus holds back per GPU for its single
  // process; fleetscope enforces lanes per process, so every job pays it).
  MemoryModel memory;
  InterferenceModel interference;
  // A multi-GPU job waiting longer than this reserves GPUs (aging); <= 0 or infinity: never.
  double starvation_bound_s = 1800;
  // Waiting jobs examined per admission round, in admission order (backfilling depth). Slurm's
  // backfill scheduler bounds the same search (slurm.conf SchedulerParameters bf_max_job_test).
  int backfill_window = 500;
  // > 0: model NVIDIA MPS instead of lanes (fleetscope/sharer/mps.h): every job its own client
  // with a static slice, all running concurrently, at most this many clients per GPU
  // (kMpsClientsVolta = 48, kMpsClientsPreVolta = 16). Needs lanes on and a sharing policy.
  int mps_clients = 0;
  // Stop the clock here (plan replay): unfinished jobs report the iterations they completed.
  double stop_at_s = std::numeric_limits<double>::infinity();
  // Guard against runs that would not end in reasonable time (stepping every iteration only).
  int64_t max_events = 2000000000;
  // Advance lanes whose jobs and speed do not change many iterations at once (closed form);
  // false steps every iteration (the reference the equivalence tests compare against).
  bool fast_forward = true;
  // Record every job's step times (completion to completion) for SimJobResult::p99_step_s; the
  // lanes are then stepped one iteration at a time (plan replay: a bounded run).
  bool record_step_times = false;
};

struct SimJobResult {
  int64_t id = 0;
  std::string name;
  int num_gpu = 1;
  double submit_s = 0;
  double start_s = 0;
  double finish_s = 0;
  int gpu = -1;   // GPU index it ran on (a multi-GPU job: its first), -1: never started
  int lane = -1;  // lane id on that GPU (lanes off: the GPU's one lane)
  double jct_s = 0;
  double solo_s = 0;  // iterations x iteration time alone
  int64_t preemptions = 0;
  // GPU-phase time spent paging its memory in and others' out (paging policies).
  double paging_s = 0;
  // Nearest-rank p99 of the job's step times in the run (each from its previous iteration's
  // end, the first from its start, so waits for lane mates count), with record_step_times; else 0.
  double p99_step_s = 0;
  double wait_s = 0;  // start - submit
  int64_t done_iterations = 0;
  // Time per completed iteration over the iteration time alone, measured from the job's start to
  // its finish (or to stop_at_s): what the planner predicts as the job's slowdown.
  double slowdown = 0;
  bool finished = false;
};

struct SimResult {
  std::string policy;
  bool lanes = true;
  int mps_clients = 0;  // > 0: the MPS model ran instead of lanes
  int gpus = 0;
  double avg_jct_s = 0;
  double makespan_s = 0;
  // Useful work (solo GPU-seconds x utilization) over GPU-seconds available during the makespan.
  double gpu_utilization = 0;
  int gpus_used_peak = 0;
  int64_t events = 0;
  // Placement checks made (LaneAllocator::probe calls): the admission cost. The earlier engine
  // made pending x GPUs of them at every iteration end.
  int64_t placement_probes = 0;
  // Iterations the lanes simulated one at a time (the rest were skipped in closed form).
  int64_t stepped_iterations = 0;
  double max_wait_multi_gpu_s = 0;  // longest wait of a multi-GPU job (starvation)
  double max_wait_single_gpu_s = 0;
  std::vector<SimJobResult> jobs;  // in input order
};

// Throws std::invalid_argument when a job can never run (too many GPUs, too much memory) or a
// job or the configuration holds an impossible value (NaN, infinite or negative times, ...).
SimResult simulate(const std::vector<SimJob>& jobs, const Policy& policy, const SimConfig& config);
// The configuration checks alone (the commands report them as usage errors).
void validate_config(const SimConfig& config);

nlohmann::json sim_result_to_json(const SimResult& result);
void write_sim_table(const SimResult& result, std::ostream& out);

}  // namespace fleetscope::sharer
