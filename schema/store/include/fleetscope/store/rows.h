// Plain row types of the trace store: the enums their members use, the nsys id encoding, and the
// row structs themselves, which are generated from the table descriptions (schema/tables.py ->
// fleetscope/store/tables.h), one per table, with the column names of the nsys export so that code
// reads like the SQL it corresponds to. Strings travel as std::string on the write side (the
// writer interns them) and as interned ids on the read side (resolve them with Reader::strings()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/store/enums.h"  // IWYU pragma: export

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

// The ENUM_* tables' values (MemcpyKind, MemoryKind, SyncType) and their labels
// (memcpy_kind_label, memcpy_kind_short, memory_kind_label): generated from schema/tables.py.
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
