// One capture loaded into columnar, sorted, in-memory arrays: the input of every metric and rule.
// The arrays are filled either by the loader (from a trace database) or directly (tests, the
// 10-million-event benchmark), then `finalize()` sorts them and builds the per-device and
// per-stream indexes that the metrics walk.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleetscope/analyzer/compact_column.h"
#include "fleetscope/analyzer/intervals.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::analyzer {

enum class GpuEventKind : uint8_t { kernel, memcpy, memset };

// What a GPU activity does, by HTA's kernel-type rule (hta_kernel_type(), device_metrics.h: HTA
// 0.5.0 hta/utils/utils.py get_kernel_type, which every HTA analysis uses, the temporal breakdown
// included): `computation` is HTA COMPUTATION, `communication` COMMUNICATION (^nccl.*Kernel),
// `memory` MEMORY (^Memcpy|^Memset|^dma, the last MTIA DMA) plus every memcpy/memset row and names
// with a later "Memcpy", `synchronization` the rest of HTA's OTHER (names containing "Sync").
enum class WorkClass : uint8_t { computation, communication, memory, synchronization };
const char* to_string(WorkClass work_class);
WorkClass classify_gpu_work(GpuEventKind kind, const std::string& name);

// Every GPU-side activity (kernels, memcpys, memsets) in one struct of arrays, sorted by start.
// Blocks in a launch grid, gridX * gridY * gridZ, saturated at INT64_MAX (three int32 extents
// can overflow int64: 2147483647^3); 0 when an extent is not positive (shape unknown).
inline int64_t grid_block_count(int64_t x, int64_t y, int64_t z) {
  if (x <= 0 || y <= 0 || z <= 0) return 0;
  int64_t xy = 0, xyz = 0;
  if (__builtin_mul_overflow(x, y, &xy) || __builtin_mul_overflow(xy, z, &xyz)) return INT64_MAX;
  return xyz;
}

// Columns that are often one value for a whole capture are CompactColumns (compact_column.h: no
// memory while they are; read by index like the others).
struct GpuEvents {
  std::vector<int64_t> start, end;
  CompactColumn<int32_t> device;
  std::vector<int32_t> stream;
  CompactColumn<int64_t> correlation;  // -1 when the source has none
  CompactColumn<int64_t> global_pid;   // -1 when unknown
  CompactColumn<int64_t> name_id;      // CaptureData::name() key
  CompactColumn<GpuEventKind> kind;
  CompactColumn<WorkClass> work_class;
  CompactColumn<int64_t> bytes;     // memcpy/memset bytes, 0 for kernels
  CompactColumn<int8_t> copy_kind;  // CUpti_ActivityMemcpyKind, -1 unless memcpy
  CompactColumn<int8_t> src_kind;   // CUpti_ActivityMemoryKind, -1 when unknown
  CompactColumn<int8_t> dst_kind;
  // Kernel launch shape, filled by the loader when the source has it (tests may leave these
  // empty): grid blocks (gridX*gridY*gridZ, 0 when unknown or not a kernel) and the estimated
  // achieved occupancy in percent (NaN when unknown).
  CompactColumn<int64_t> grid_blocks;
  CompactColumn<double> est_occupancy;

  size_t size() const { return start.size(); }
  int64_t duration(size_t i) const { return end[i] - start[i]; }
  void reserve(size_t n);
};

// Host-side CUDA API calls, sorted by start.
struct RuntimeCalls {
  std::vector<int64_t> start, end;
  std::vector<int64_t> correlation;  // -1 when none
  std::vector<int64_t> name_id;
  std::vector<int64_t> global_tid;
  size_t size() const { return start.size(); }
  void reserve(size_t n);
};

// A named host-side range (DataLoader ops, synchronization calls) used by rules.
struct HostRange {
  int64_t start = 0, end = 0;
  int64_t name_id = 0;
  int64_t global_tid = 0;
  bool is_operator = false;  // Kineto cat "cpu_op" (not an annotation, not python_function)
};

// GPU-side synchronization waits that carry a stream (Kineto cuda_sync "Stream Sync", "Stream Wait
// Event", and "Event Sync"/"Context Sync" written with the wrapped stream -1). HTA counts them as
// GPU events in its temporal breakdown, so temporal_breakdown() does; nothing else here does (a
// wait is not GPU work).
struct GpuSyncs {
  std::vector<int64_t> start, end;
  std::vector<int32_t> device, stream;
  std::vector<int64_t> name_id;
  std::vector<WorkClass> work_class;
  std::vector<int64_t> correlation;  // the waiting runtime call's correlation id, -1 when none
  std::vector<int64_t> call_of;      // built by finalize(): runtime-call index, or -1
  size_t size() const { return start.size(); }
};

// Synchronization rows only the critical path reads (critical_path.h), loaded with gpu_syncs:
// waits on a recorded CUDA event whose recording is known (the store's eventRecordCorrelationId),
// cudaEventSynchronize/cudaEventQuery ("Event Sync", a host wait) or cudaStreamWaitEvent ("Stream
// Wait Event", a stream waits), with or without a stream; and Context Syncs without a stream
// (newer Kineto writes "stream": -1 for them; those with a stream are in gpu_syncs). None is GPU
// work, so the temporal breakdown does not see the ones without a stream (HTA neither).
struct SyncWait {
  enum class Kind : uint8_t { event_sync, stream_wait_event, context_sync };
  Kind kind = Kind::event_sync;
  int64_t start = 0, end = 0;
  int32_t device = -1;              // -1: unknown
  int32_t stream = -1;              // the waiting stream (Stream Wait Event), -1 none
  int64_t correlation = -1;         // the waiting runtime call
  int64_t record_correlation = -1;  // the cudaEventRecord call waited on, -1 none
  int32_t record_stream = -1;       // the stream the event was recorded on, -1 unknown
  bool operator==(const SyncWait&) const = default;
};

// Kineto's name of a CUpti_ActivitySynchronizationType ("Stream Sync", ...).
const char* sync_label(int32_t sync_type);

// The optional parts of a capture: what a load may leave out when the rules and outputs asked
// for do not read it (Rule::reads(), loader.h). GPU events (kernels, copies, memsets), iterations,
// GPU properties, processes, workflows and names are always loaded.
struct CaptureParts {
  bool runtime = true;         // CUDA runtime/driver calls (launch join, API-call rules)
  bool gpu_syncs = true;       // synchronization waits with a stream (temporal breakdown)
  bool cpu_ops = true;         // CPU operator ranges (host activity)
  bool dataloader_ops = true;  // the DataLoader's cpu_ops
  bool memory_events = true;   // allocations and frees (memory timeline, P and T)

  static CaptureParts all() { return {}; }
  static CaptureParts gpu_only() { return {false, false, false, false, false}; }
  CaptureParts& operator|=(const CaptureParts& o) {
    runtime |= o.runtime, gpu_syncs |= o.gpu_syncs, cpu_ops |= o.cpu_ops;
    dataloader_ops |= o.dataloader_ops, memory_events |= o.memory_events;
    return *this;
  }
  bool covers(const CaptureParts& o) const {
    return (runtime || !o.runtime) && (gpu_syncs || !o.gpu_syncs) && (cpu_ops || !o.cpu_ops) &&
           (dataloader_ops || !o.dataloader_ops) && (memory_events || !o.memory_events);
  }
  bool operator==(const CaptureParts&) const = default;
  // "runtime, cpu_ops" (the parts set), for messages.
  std::string names() const;
};

struct CaptureData {
  // What was loaded (everything unless the loader was told otherwise): the rules check it.
  CaptureParts loaded;
  store::Capture capture;
  std::vector<store::GpuInfo> gpus;
  std::vector<store::Process> processes;
  std::vector<store::Workflow> workflows;
  std::vector<store::Iteration> iterations;  // sorted by start
  std::vector<store::MemoryEvent> memory;    // sorted by ts
  std::vector<HostRange> dataloader_ops;     // cpu_ops named enumerate(DataLoader)...
  std::vector<HostRange> cpu_ops;            // all top-level-or-not cpu_ops (host activity)
  // Kineto gpu_user_annotation ranges: user annotations drawn on the GPU timeline (the span of
  // the GPU work launched under them). Loaded with cpu_ops; not host activity.
  std::vector<HostRange> gpu_annotations;
  GpuEvents gpu;
  GpuSyncs gpu_syncs;
  std::vector<SyncWait> sync_waits;  // with gpu_syncs
  RuntimeCalls runtime;

  // Names (kernel names, API names). Ids are the store's StringIds ids; the analyzer adds its own
  // names (e.g. "Memcpy HtoD (Pageable -> Device)") under negative ids via intern().
  std::unordered_map<int64_t, std::string> names;
  const std::string& name(int64_t id) const;
  int64_t intern(const std::string& text);  // finds or adds (negative id for new text)
  std::optional<int64_t> find_name(const std::string& text) const;

  // The file the data was read from (the loader sets it), for error messages.
  std::string origin_file;
  // The capture's rows as the loader found them before reading any (store::capture_rows_key):
  // the analysis cache's key of this data (analysis_cache.h). Empty when not loaded from a
  // database (an import into memory, a test): never cached.
  std::string rows_key;

  // Sorts the event arrays and builds the indexes below. Call after filling the arrays. First
  // range-checks every time (check_time_ranges), so no metric can overflow on a corrupt value.
  void finalize();

  // Built by finalize(): indexes into `gpu`, each in start order.
  std::map<int32_t, std::vector<uint32_t>> events_by_device;
  std::map<std::pair<int32_t, int32_t>, std::vector<uint32_t>> events_by_stream;
  // Runtime-call index of each GPU event's launching call (same correlation id), or -1.
  CompactColumn<int64_t> launch_call_of;

  // Union of GPU activity per device (all event kinds). Built by finalize().
  std::map<int32_t, IntervalSet> busy_by_device;
  // First GPU event start to last GPU event end, per device (HTA's denominator).
  std::optional<Interval> device_span(int32_t device) const;
  // The capture-wide span of GPU activity, if any.
  std::optional<Interval> gpu_span() const;
  // [first step start, last step end] when steps exist (the profiler plugin's denominator).
  std::optional<Interval> step_span() const;

 private:
  int64_t next_local_id_ = -1;
  std::unordered_map<std::string, int64_t> ids_by_name_;
  bool reverse_index_built_ = false;
  void build_reverse_index();
};

// Every timestamp the metrics subtract must lie in [-kMaxAbsTimeNs, kMaxAbsTimeNs] (2^62 - 1 ns,
// about 146 years either side of the epoch): then any difference of two times fits in int64. A
// value outside (a corrupt database: start = 1e300 read as INT64_MAX, INT64_MIN) is an InputError
// naming `origin_file` (else the capture's source), the event and the value, raised before any
// arithmetic.
constexpr int64_t kMaxAbsTimeNs = (int64_t{1} << 62) - 1;
void check_time_ranges(const CaptureData& data);

// Short kernel-like label for a memcpy, in Kineto's spelling ("Memcpy HtoD (Pageable -> Device)"),
// so HTA's name-based classification sees the same text.
std::string memcpy_label(int32_t copy_kind, std::optional<int32_t> src_kind,
                         std::optional<int32_t> dst_kind);

}  // namespace fleetscope::analyzer
