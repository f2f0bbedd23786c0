// Export of a trace database to the Chrome trace-event JSON format that Perfetto, chrome://tracing
// and the PyTorch/Kineto tool chain (HTA, TensorBoard) open. The layout follows what Kineto writes,
// so the file re-imports through fleetscope's Kineto importer:
//   - one process per GPU, pid = device ordinal (Kineto's convention), named "GPU N: <name>";
//     one thread per stream, tid = stream id, named "stream N";
//   - host processes and threads (pid/tid decoded from the nsys globalTid) with CUDA runtime/driver
//     calls ("cuda_runtime"/"cuda_driver"), CPU ops (their Kineto category) and NVTX ranges;
//   - kernels ("kernel"), memcpys ("gpu_memcpy"), memsets ("gpu_memset") and syncs ("cuda_sync") as
//     complete "X" events with Kineto's arg names, plus fleetscope's (copy kind labels, ...);
//   - one flow ("s" at the launch, "f" with bp "e" at the GPU activity, cat "ac2g", id =
//   correlation)
//     per launch/GPU-activity pair sharing a correlation id;
//   - counters ("C"): device_samples per metric, and allocated device memory over time; memory
//   events
//     also as Kineto "[memory]" instant events;
//   - counters derived by analysis, as HTA's generate_trace_with_counters writes them: "Queue
//     Length" per stream ("id" = stream) and "Memcpy BW" per copy kind (analysis_counters.h);
//   - iterations as "X" spans on a per-process "iterations" track; findings as instant events.
// Columns are not listed here by hand: each exported table is read through its description
// generated from schema/tables.py (store/table_columns.h), whose `chrome` names say which arg each
// column becomes, and every value is range-checked before it is narrowed (docs/export.md).
// Times: "ts"/"dur" in microseconds with exactly three decimals relative to baseTimeNanoseconds
// (the earliest exported event), Kineto's top-level field, also repeated under "metadata".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/export/event_sink.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::exporter {

struct ChromeExportOptions {
  std::optional<int64_t> capture_id;  // unset = every capture in the database
  std::optional<bool> gzip;           // unset = by the output name (".gz" suffix)
  int gzip_level = 6;                 // zlib's default trade-off
  bool flows = true;                  // launch → GPU activity arrows
  bool memory_instants = true;  // Kineto "[memory]" events (re-importable) besides the counter
  bool findings = true;
  // HTA's generate_trace_with_counters tracks: launch-queue length per stream and memory-copy
  // bandwidth per copy kind. Off by default: they need the capture's GPU work and launch calls in
  // memory (the analyzer's load), while the rest of the export streams rows in bounded memory
  // (docs/export.md, docs/benchmarks.md "Export").
  bool analysis_counters = false;
  // Called about every `progress_every` events with the count so far (for a progress line).
  std::function<void(int64_t events)> on_progress;
  int64_t progress_every = 1'000'000;
  // false (`export` without --force): a file that appears at the output while the export runs is
  // not replaced (store::AtomicOutput::Replace::no); the command refuses an existing one first.
  bool replace_existing = true;
};

struct ChromeExportStats {
  int64_t base_time_ns = 0;
  int64_t events = 0;  // every event written, metadata included
  int64_t kernels = 0, memcpys = 0, memsets = 0, runtime_calls = 0, syncs = 0, nvtx_events = 0,
          cpu_ops = 0, iterations = 0, memory_events = 0, device_samples = 0, findings = 0,
          flows = 0,                                  // flows = "s"/"f" pairs
      queue_length_points = 0, bandwidth_points = 0;  // the analysis counters' events
  int64_t bytes = 0;  // bytes written to the file (compressed size not counted)
};

// Writes the database (or one capture) to `out_path` atomically: a temporary file beside it is
// renamed over `out_path` on success and removed on failure. Throws fleetscope::InputError when the
// capture does not exist, fleetscope::Error on I/O failures.
ChromeExportStats export_chrome(const store::Reader& reader, const std::string& out_path,
                                const ChromeExportOptions& options = {});

// The pid the export gives GPU `device_id` (Kineto's convention: the device ordinal).
inline int64_t gpu_pid(int32_t device_id) {
  return device_id;
}

// Appends findings as Chrome-trace instant events ("i", cat "finding"): scope "p" on the GPU's
// process when the finding names a device, "g" (global) otherwise; ts = window start (or
// `base_time_ns` when the finding has no window). Args carry rule, severity, impact (ns and ms),
// the windows, the evidence (as JSON when it parses, else as text) and the recommendation.
// Returns the number of events written. The analyzer uses this for its Chrome-trace rendering.
// `pid_base`: added to the GPU pid (a several-capture export's process group).
int64_t append_findings_events(EventSink& sink, const std::vector<store::Finding>& findings,
                               int64_t base_time_ns, int64_t pid_base = 0);

// The JSON object of one finding event (what append_findings_events writes per finding).
std::string finding_event_json(const store::Finding& finding, int64_t base_time_ns,
                               int64_t pid_base = 0);

}  // namespace fleetscope::exporter
