// Plain row types of the trace store: the enums their members use, the nsys id encoding, and the
// row structs themselves, which are generated from the table descriptions (schema/tables.py ->
// fleetscope/store/tables.h), one per table, with the column names of the nsys export so that code
// reads like the SQL it corresponds to. Strings travel as std::string on the write side (the
// writer interns them) and as interned ids on the read side (resolve them with Reader::strings()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fleetscope::store {

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

enum class ApiClass : int32_t { runtime = 0, driver = 1 };

// nsys NvtxEventType values.
enum NvtxEventType : int32_t { kNvtxMark = 34, kNvtxPushPopRange = 59, kNvtxStartEndRange = 60 };

}  // namespace fleetscope::store

#include "fleetscope/store/tables.h"  // IWYU pragma: export

namespace fleetscope::store {

// A half-open time window [begin, end) in ns. Event rows overlap it when start < end_ && end >
// begin.
struct TimeWindow {
  int64_t begin = INT64_MIN;
  int64_t end = INT64_MAX;
};

}  // namespace fleetscope::store
