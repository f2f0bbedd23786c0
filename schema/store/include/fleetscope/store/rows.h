// Plain row types of the trace store. One struct per event table in schema/trace.sql; the field
// names follow the nsys export columns so that code reads like the SQL it corresponds to.
// Strings travel as std::string on the write side (the writer interns them) and as interned ids
// on the read side (resolve them with Reader::strings()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fleetscope::store {

inline constexpr int kSchemaVersion = 3;

// nsys encodes process and thread ids into one integer: pid * 2^24 + tid.
inline constexpr int64_t global_pid(int64_t pid) {
  return pid << 24;
}
inline constexpr int64_t global_tid(int64_t pid, int64_t tid) {
  return (pid << 24) | (tid & 0xFFFFFF);
}
inline constexpr int64_t pid_of(int64_t global_id) {
  return (global_id >> 24) & 0xFFFFFF;
}
inline constexpr int64_t tid_of(int64_t global_id) {
  return global_id & 0xFFFFFF;
}

enum class CaptureKind { continuous, on_demand, imported, standalone };
const char* to_string(CaptureKind kind);
std::optional<CaptureKind> capture_kind_from_string(const std::string& text);

struct Capture {
  int64_t id = 0;  // assigned by the store
  CaptureKind kind = CaptureKind::imported;
  std::string source;       // 'kineto-json', 'nsys-sqlite', 'fleetscope-agent'
  std::string source_path;  // file or command
  std::optional<int64_t> start_ns;
  std::optional<int64_t> end_ns;
  int64_t dropped_records = 0;
  int64_t collector_overhead_ns = 0;
  std::optional<std::string> gpu_vendor;  // 'nvidia', 'amd', or none when no GPU activity
  std::optional<std::string> note;
};

struct Host {
  int64_t id = 0;
  std::string hostname;
  std::optional<std::string> boot_id;
};

struct Workflow {
  int64_t id = 0;
  std::string name;
  std::optional<std::string> user;
  std::string labels_json = "{}";
};

// A process of one capture: (captureId, globalPid) is the key, so pids that repeat across captures
// never merge. captureId is unset only in rows migrated from schema 2, which apply to every capture
// of their file (see processes_of).
struct Process {
  std::optional<int64_t> captureId;
  int64_t globalPid = 0;
  int64_t pid = 0;
  std::optional<int64_t> host_id;
  std::optional<int64_t> workflow_id;
  std::optional<int32_t> rank;
  std::optional<int32_t> world_size;
  std::optional<std::string> command;
  std::optional<int64_t> start_ns;
  std::optional<int64_t> end_ns;
};

struct GpuInfo {
  int32_t id = 0;  // device ordinal
  int64_t captureId = 0;
  std::string name;
  std::optional<std::string> uuid;
  std::optional<std::string> busLocation;
  std::optional<int64_t> totalMemory;
  std::optional<int32_t> smCount;
  std::optional<int32_t> computeMajor;
  std::optional<int32_t> computeMinor;
  std::optional<int64_t> clockRate;
  std::optional<int64_t> memoryBandwidth;
  std::optional<int32_t> maxThreadsPerBlock;
  std::optional<int32_t> maxWarpsPerSm;
  std::optional<int32_t> maxBlocksPerSm;
  std::optional<int32_t> maxRegistersPerSm;
  std::optional<int64_t> maxShmemPerSm;
  std::optional<int32_t> threadsPerWarp;
  std::string vendor = "nvidia";
};

// Write side: names as strings. Read side: the same struct with the *_id fields filled and the
// string fields empty (see Reader).
struct Kernel {
  int64_t start = 0, end = 0;
  int32_t deviceId = 0;
  std::optional<int32_t> contextId;
  int32_t streamId = 0;
  std::optional<int64_t> correlationId;
  std::optional<int64_t> globalPid;
  std::string demangledName;                     // write side
  std::string shortName;                         // write side; empty = derive from demangledName
  int64_t demangledNameId = 0, shortNameId = 0;  // read side
  int32_t gridX = 0, gridY = 0, gridZ = 0;
  int32_t blockX = 0, blockY = 0, blockZ = 0;
  std::optional<int32_t> registersPerThread;
  std::optional<int32_t> staticSharedMemory;
  std::optional<int32_t> dynamicSharedMemory;
  std::optional<int32_t> localMemoryPerThread;
  std::optional<int64_t> graphId;
  std::optional<int64_t> graphNodeId;
  std::optional<int32_t> launchType;
  std::optional<double> blocksPerSm;
  std::optional<double> warpsPerSm;
  std::optional<double> estOccupancy;  // percent
  int64_t captureId = 0;
};

// CUpti_ActivityMemcpyKind values (ENUM_CUDA_MEMCPY_OPER).
enum MemcpyKind : int32_t {
  kMemcpyUnknown = 0,
  kMemcpyHtoD = 1,
  kMemcpyDtoH = 2,
  kMemcpyHtoA = 3,
  kMemcpyAtoH = 4,
  kMemcpyAtoA = 5,
  kMemcpyAtoD = 6,
  kMemcpyDtoA = 7,
  kMemcpyDtoD = 8,
  kMemcpyHtoH = 9,
  kMemcpyPtoP = 10
};
// CUpti_ActivityMemoryKind values (ENUM_CUDA_MEM_KIND).
enum MemoryKind : int32_t {
  kMemUnknown = 0,
  kMemPageable = 1,
  kMemPinned = 2,
  kMemDevice = 3,
  kMemArray = 4,
  kMemManaged = 5,
  kMemDeviceStatic = 6,
  kMemManagedStatic = 7
};
// CUpti_ActivitySynchronizationType values (ENUM_CUPTI_SYNC_TYPE).
enum SyncType : int32_t {
  kSyncUnknown = 0,
  kSyncEvent = 1,
  kSyncStreamWaitEvent = 2,
  kSyncStream = 3,
  kSyncContext = 4
};

// Labels of the enums above, one spelling for every part (exporter, analyzer, reports).
const char* memcpy_kind_short(int32_t kind);  // "HtoD", as in Kineto's "Memcpy HtoD (...)"
const char* memcpy_kind_label(int32_t kind);  // ENUM_CUDA_MEMCPY_OPER.label, "Host-to-Device"
const char* memory_kind_label(
    int32_t kind);                          // ENUM_CUDA_MEM_KIND.label, "Pageable" (also Kineto's)
const char* sync_type_label(int32_t type);  // Kineto's cuda_sync names, "Stream Sync"

struct Memcpy {
  int64_t start = 0, end = 0;
  int32_t deviceId = 0;
  std::optional<int32_t> contextId;
  int32_t streamId = 0;
  std::optional<int64_t> correlationId;
  std::optional<int64_t> globalPid;
  int64_t bytes = 0;
  int32_t copyKind = kMemcpyUnknown;
  std::optional<int32_t> srcKind;
  std::optional<int32_t> dstKind;
  std::optional<int32_t> srcDeviceId;
  std::optional<int32_t> dstDeviceId;
  std::optional<int64_t> graphNodeId;
  int64_t captureId = 0;
};

struct Memset {
  int64_t start = 0, end = 0;
  int32_t deviceId = 0;
  std::optional<int32_t> contextId;
  int32_t streamId = 0;
  std::optional<int64_t> correlationId;
  std::optional<int64_t> globalPid;
  std::optional<int32_t> value;
  int64_t bytes = 0;
  std::optional<int32_t> memKind;
  std::optional<int64_t> graphNodeId;
  int64_t captureId = 0;
};

enum class ApiClass : int32_t { runtime = 0, driver = 1 };

struct RuntimeCall {
  int64_t start = 0, end = 0;
  ApiClass eventClass = ApiClass::runtime;
  int64_t globalTid = 0;
  std::optional<int64_t> correlationId;
  std::string name;    // write side, e.g. 'cudaLaunchKernel'
  int64_t nameId = 0;  // read side
  std::optional<int32_t> returnValue;
  std::optional<int32_t> cbid;
  int64_t captureId = 0;
};

struct Sync {
  int64_t start = 0, end = 0;
  std::optional<int32_t> deviceId;
  std::optional<int32_t> contextId;
  std::optional<int32_t> streamId;
  std::optional<int64_t> correlationId;
  std::optional<int64_t> globalPid;
  std::optional<int64_t> globalTid;
  int32_t syncType = kSyncUnknown;
  std::optional<int64_t> eventId;
  int64_t captureId = 0;
};

// nsys NvtxEventType values.
enum NvtxEventType : int32_t { kNvtxMark = 34, kNvtxPushPopRange = 59, kNvtxStartEndRange = 60 };

struct NvtxEvent {
  int64_t start = 0;
  std::optional<int64_t> end;
  int32_t eventType = kNvtxPushPopRange;
  std::optional<int64_t> rangeId;
  std::string text;
  std::optional<int32_t> domainId;
  std::optional<int64_t> globalTid;
  int64_t captureId = 0;
};

struct CpuOp {
  int64_t start = 0, end = 0;
  int64_t globalTid = 0;
  std::string name;    // write side
  int64_t nameId = 0;  // read side
  std::string category =
      "cpu_op";  // 'cpu_op', 'user_annotation', 'gpu_user_annotation', 'python_function'
  std::optional<int64_t> externalId;
  int64_t captureId = 0;
};

// CUPTI external correlation (table external_correlation).
struct ExternalCorrelation {
  int64_t captureId = 0;
  int64_t correlationId = 0;
  int32_t externalKind = 0;  // CUpti_ExternalCorrelationKind
  int64_t externalId = 0;
};

struct Iteration {
  int64_t captureId = 0;
  std::optional<int64_t> globalPid;
  int64_t step = 0;
  int64_t start = 0, end = 0;
  std::string source = "ProfilerStep";  // 'ProfilerStep', 'nvtx', 'api'
};

struct MemoryEvent {
  int64_t ts = 0;
  int64_t captureId = 0;
  std::optional<int64_t> globalPid;
  int32_t deviceId = 0;  // -1 = host
  std::optional<int64_t> address;
  int64_t bytes = 0;  // + alloc, - free
  std::optional<int64_t> total_allocated;
  std::optional<int64_t> total_reserved;
};

struct DeviceSample {
  int64_t ts = 0;
  std::optional<int64_t> host_id;
  int32_t deviceId = 0;
  std::string metric;    // write side, e.g. 'gpu_util_pct'
  int64_t metricId = 0;  // read side
  double value = 0;
  std::optional<int64_t> captureId;
};

struct Finding {
  int64_t id = 0;
  int64_t captureId = 0;
  std::string rule;
  std::string severity;  // info | low | medium | high | critical
  std::optional<int32_t> deviceId;
  std::optional<int64_t> window_start;
  std::optional<int64_t> window_end;
  int64_t impact_ns = 0;
  std::string evidence_json = "{}";
  std::string recommendation;
  int64_t created_ns = 0;
};

// A half-open time window [begin, end) in ns. Event rows overlap it when start < end_ && end >
// begin.
struct TimeWindow {
  int64_t begin = INT64_MIN;
  int64_t end = INT64_MAX;
};

}  // namespace fleetscope::store
