// Consolidation inputs for the sharer: per job and GPU, how busy the job keeps the GPU and how
// much memory it needs, split the way Salus's lane safety condition uses it
// (sum_i P_i + max_i T_i <= C_lane):
//   P (persistent bytes): device memory the job holds across iterations (weights, optimizer
//     state, allocator cache) — the largest allocated level seen at an iteration boundary;
//   T (ephemeral peak bytes): the most memory one iteration allocates on top of what it started
//     with — max over iterations of (peak level inside the iteration − level at its start).
// Both are upper-bound estimates (the safe side for the safety condition). Without iterations,
// P is the level at the end of the capture and T the capture peak above it. The allocated level
// is memory_events.total_allocated when the source reports it, else the running sum of bytes.
//
// Where P and T come from, best evidence first (`memory_evidence`, shown with every candidate):
//   1. "trace": memory events inside the window that report the allocated level
//      (total_allocated): P and T as above;
//   2. "nvml": the daemon's per-process NVML used memory of the job's workflow on that GPU (the
//      peak of workflow_metrics' memory_peak_bytes over the workflow's metric windows) is P + T,
//      with T from the window's memory events when it has some (else T = 0, P = the peak: the safe
//      side). An on-demand window on a running job never sees the weights allocated before it,
//      and a caching allocator in steady state allocates nothing, so the trace alone would give
//      P = 0 there. NVML's figure includes the process's CUDA context (memory_includes_context);
//   3. "trace" from memory events without allocator totals (a running sum from 0: P is a lower
//      bound) when the
//      host has no NVML figure;
//   4. "declared": a source the user names (declared_memory.h);
//   5. "unknown": nothing measured; such a job is not planned.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {

struct ConsolidationCandidate {
  int64_t capture_id = 0;
  int64_t workflow_id = -1;
  std::string workflow;  // job name
  std::string user;
  std::string labels_json = "{}";             // the workflow's labels (JSON object text)
  std::map<std::string, std::string> labels;  // the same, flattened to strings
  int32_t device = 0;
  std::string gpu_name;
  std::string gpu_uuid;              // TARGET_INFO_GPU.uuid when known (unique across a fleet)
  int64_t gpu_memory_bytes = 0;      // device capacity C (TARGET_INFO_GPU.totalMemory), 0 unknown
  int64_t persistent_bytes = 0;      // P
  int64_t ephemeral_peak_bytes = 0;  // T
  // Standard deviation of the per-iteration ephemeral peak (the sharer's peak_stddev_bytes); -1
  // when fewer than two iterations were measured.
  double ephemeral_peak_stddev_bytes = -1.0;
  // The caching allocator's reserved peak in the window (0: not reported). It does not give
  // cached blocks back to other processes, so the job needs max(P + T, this) of the device.
  int64_t reserved_peak_bytes = 0;
  int64_t footprint_bytes() const {
    return std::max(persistent_bytes + ephemeral_peak_bytes, reserved_peak_bytes);
  }
  bool memory_measured = false;  // P and T measured (evidence trace or nvml); false: P = T = 0
  // false: the evidence is memory events without allocator totals, so P is unknown (a lower
  // bound); see MemoryFootprint::totals_known. NVML's figure is absolute (true).
  bool memory_totals_known = true;
  // Where P and T come from when not measured: "FILE:NAME" of a declared source
  // (declared_memory.h); empty when measured or unknown.
  std::string memory_source;
  // "trace", "nvml", "declared" or "unknown" (the order above), and the detail in words.
  std::string memory_evidence = "unknown";
  std::string memory_evidence_detail = "no memory events and no NVML figure";
  bool memory_includes_context = false;  // P counts the process's CUDA context (NVML's figure)
  double utilization = 0;                // GPU busy fraction (step span, else first-to-last event)
  int64_t busy_ns = 0;
  int64_t window_ns = 0;
  int64_t iteration_ns = 0;  // median iteration time, 0 without iterations
  // p99 iteration time (nearest rank, as the step-time tail: the slowest of fewer than 100), 0
  // without iterations: the sharer's planner bounds the predicted p99 with it.
  int64_t iteration_p99_ns = 0;
  int64_t iterations = 0;
  // The analyzer's verdict: utilization below the threshold and memory measured and P + T below
  // the GPU's capacity (the job could share the GPU).
  bool co_location_candidate = false;
  std::string reason;
};

// The candidate's job name: its workflow, or "captureN" for a capture without one (the planner's
// job ids, the HPO trials' names, the reasons a job is not planned).
std::string job_name(const ConsolidationCandidate& candidate);

struct ConsolidationOptions {
  double max_utilization = 0.5;  // PyTorch profiler's low-utilization line (50 %)
};

std::vector<ConsolidationCandidate> consolidation_candidates(
    const CaptureData& data, const ConsolidationOptions& options = {});

// One loaded capture's candidates with the host's NVML figures (nvml_memory below, read from
// `reader`, the capture's database) where the trace has no totals: what AnalysisSession keeps
// per capture.
std::vector<ConsolidationCandidate> consolidation_candidates(
    const CaptureData& data, const store::Reader& reader, const ConsolidationOptions& options = {});

// Every capture in the database, each as above.
std::vector<ConsolidationCandidate> consolidation_candidates(
    const store::Reader& reader, const ConsolidationOptions& options = {});

// The daemon's per-process NVML memory of each (workflow id, device): the peak of
// workflow_metrics' memory_peak_bytes over the workflow's metric windows, and how many windows.
struct NvmlMemory {
  int64_t peak_bytes = 0;
  int64_t windows = 0;
};
std::map<std::pair<int64_t, int32_t>, NvmlMemory> nvml_memory(const store::Reader& reader);

// Takes P + T from the NVML figure when it is better evidence than the candidate's (see the
// order above) and re-decides the verdict; leaves the candidate alone otherwise.
void apply_nvml_memory(ConsolidationCandidate& candidate, const NvmlMemory& memory,
                       const ConsolidationOptions& options = {});

// The analyzer's verdict from utilization and memory (sets co_location_candidate and reason).
void decide_candidate(ConsolidationCandidate& candidate, const ConsolidationOptions& options);

// P and T from one job's memory events on one device (sorted by ts) and its iterations.
// Beyond P and T, the allocator's side of the timeline (PyTorch's caching allocator reports
// total_reserved next to total_allocated on each Kineto "[memory]" event): reserved_peak_bytes
// is the highest reserved level (0 when never reported); fragmentation = 1 − allocated peak /
// reserved peak, the share of what the allocator holds at its peak that no tensor uses
// (torch.cuda.memory_reserved() − memory_allocated(): cached or fragmented blocks, PyTorch CUDA
// semantics "Memory management"); churn = the allocations and their bytes (events with bytes
// > 0) — what a step allocates and frees again.
struct MemoryFootprint {
  int64_t persistent_bytes = 0;
  int64_t ephemeral_peak_bytes = 0;
  int64_t peak_bytes = 0;
  double ephemeral_peak_stddev_bytes = -1.0;  // over iterations; -1 with fewer than two
  int64_t reserved_peak_bytes = 0;
  double fragmentation = 0;  // 0 without reserved levels
  int64_t allocations = 0, allocated_bytes = 0;
  // Whether the levels are absolute: the events carry the allocator's total (PyTorch's "Total
  // Allocated"). Without it the level starts at 0 at the first event, memory allocated before
  // the capture is not counted, and P is unknown (the figures are a lower bound).
  bool totals_known = true;
  // What a co-located job needs the device to hold: P + T, or the reserved peak when the
  // allocator keeps more than that (it does not give cached blocks back to other processes).
  int64_t footprint_bytes() const {
    return std::max(persistent_bytes + ephemeral_peak_bytes, reserved_peak_bytes);
  }
};
MemoryFootprint memory_footprint(const std::vector<store::MemoryEvent>& events,
                                 const std::vector<Interval>& iterations);

}  // namespace fleetscope::analyzer
