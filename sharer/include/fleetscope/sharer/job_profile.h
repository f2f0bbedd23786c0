#pragma once
// What the planner knows about one running job: the analyzer's consolidation inputs. Kept as a
// plain struct so the sharer does not depend on the analyzer's storage.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fleetscope/sharer/safety.h"

namespace fleetscope::sharer {

struct JobProfile {
  std::string job_id;
  std::string workflow;
  std::string gpu;                   // the GPU the job runs on now (unique across the fleet)
  int64_t persistent_bytes = 0;      // P
  int64_t ephemeral_peak_bytes = 0;  // T
  int64_t gpu_capacity_bytes = 0;    // memory of the job's current GPU
  double utilization = 0.0;          // 0..1, share of time the GPU is busy with this job
  int64_t iteration_ns = 0;          // measured iteration time when running alone
  // Measured p99 iteration time alone (the analyzer's step-time tail); 0 when not measured.
  int64_t iteration_p99_ns = 0;
  // Measured std deviation of the per-iteration peak; negative when not measured.
  double peak_stddev_bytes = -1.0;
  // "class": "latency" | "batch"; "priority": any value marks the job as prioritised;
  // "max_slowdown": per-job bound overriding the plan-wide one; "p99_target_ms": a latency
  // target for the p99 step time (a latency-sensitive job with one may share a lane within it);
  // "workload": the name of the job's workload in a co-location calibration (its pair terms).
  std::map<std::string, std::string> labels;
  // Where P and T come from, in words ("trace: ...", "nvml: ...", "declared: ..."); empty for a
  // profile file that does not say.
  std::string memory_evidence;

  MemoryDemand demand() const {
    return MemoryDemand{persistent_bytes, ephemeral_peak_bytes, peak_stddev_bytes};
  }
  // Latency-labelled or prioritised jobs must never wait behind a batch job.
  bool latency_sensitive() const;
};

// Parses a JSON array of JobProfile objects (field names as above). Throws std::runtime_error
// naming `source` and the offending element.
std::vector<JobProfile> parse_job_profiles(const std::string& json_text, const std::string& source);
std::vector<JobProfile> load_job_profiles(const std::string& path);

}  // namespace fleetscope::sharer
