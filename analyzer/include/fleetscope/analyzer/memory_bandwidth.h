// Memory-copy bandwidth per copy kind: HTA get_memory_bw_time_series / get_memory_bw_summary
// (hta/analyzers/trace_counters.py, holistictraceanalysis 0.5.0).
//
// Events: the GPU events of HTA kernel type MEMORY (hta_kernel_type(): ^Memcpy, ^Memset, ^dma),
// after HTA's last-step filter (HtaStepFilter). Copy kind = HTA get_memory_kernel_type(name): the
// first 11 characters of a "Memcpy ..." name ("Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", ...),
// "Memset" for "Memset ..." names, else "Memcpy Unknown" (MTIA "dma..."). An event's bandwidth is
// Kineto's "memory bandwidth (GB/s)" arg, which Kineto computes as bytes / duration in ns (bytes
// per ns = GB/s): here bytes / (end − start) from the store; 0 for an event without bytes (HTA's
// default for a missing arg). A zero-length event lasts 1 µs, as HTA makes it (HTA issue #20).
//
// Time series per (device, kind): +bandwidth at each start, −bandwidth at each end, in time order
// (at one time, ends before starts), running sum = the bandwidth in use at that point.
// Summary = pandas describe() of the series' values that are > 0 (HTA excludes the zero points),
// plus the events' count and bytes. HTA groups by kind within a rank; the key here adds the
// device (the same for one-device ranks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/describe.h"

namespace fleetscope::analyzer {

std::string hta_memory_kernel_type(const std::string& name);

struct BandwidthPoint {
  int64_t time_ns = 0;
  double gbps = 0;
};

struct MemoryBandwidthSeries {
  int32_t device = 0;
  std::string copy_kind;
  std::vector<BandwidthPoint> points;
};

struct MemoryBandwidthSummary {
  int32_t device = 0;
  std::string copy_kind;
  int64_t count = 0;    // events
  int64_t bytes = 0;    // Σ bytes of the events that carry them
  int64_t busy_ns = 0;  // Σ event durations (not a union)
  Describe gbps;        // over the series points with a value > 0
};

std::vector<MemoryBandwidthSeries> memory_bandwidth_time_series(const CaptureData& data,
                                                                bool hta_last_step_filter = true);
std::vector<MemoryBandwidthSummary> memory_bandwidth_summary(const CaptureData& data,
                                                             bool hta_last_step_filter = true);

}  // namespace fleetscope::analyzer
