#include "fleetscope/store/rows.h"

namespace fleetscope::store {

const char* to_string(CaptureKind kind) {
  switch (kind) {
    case CaptureKind::continuous:
      return "continuous";
    case CaptureKind::on_demand:
      return "on_demand";
    case CaptureKind::imported:
      return "imported";
    case CaptureKind::standalone:
      return "standalone";
  }
  return "imported";
}

std::optional<CaptureKind> capture_kind_from_string(const std::string& text) {
  for (CaptureKind k : {CaptureKind::continuous, CaptureKind::on_demand, CaptureKind::imported,
                        CaptureKind::standalone})
    if (text == to_string(k)) return k;
  return std::nullopt;
}

const char* memcpy_kind_short(int32_t kind) {
  static const char* const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind >= 0 && kind <= 10 ? names[kind] : "Unknown";
}

const char* memcpy_kind_label(int32_t kind) {
  static const char* const labels[] = {"Unknown",         "Host-to-Device",  "Device-to-Host",
                                       "Host-to-Array",   "Array-to-Host",   "Array-to-Array",
                                       "Array-to-Device", "Device-to-Array", "Device-to-Device",
                                       "Host-to-Host",    "Peer-to-Peer"};
  return kind >= 0 && kind <= 10 ? labels[kind] : "Unknown";
}

const char* memory_kind_label(int32_t kind) {
  static const char* const labels[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                       "Array",   "Managed",  "Device Static", "Managed Static"};
  return kind >= 0 && kind <= 7 ? labels[kind] : "Unknown";
}

const char* sync_type_label(int32_t type) {
  switch (type) {
    case kSyncEvent:
      return "Event Sync";
    case kSyncStreamWaitEvent:
      return "Stream Wait Event";
    case kSyncStream:
      return "Stream Sync";
    case kSyncContext:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

}  // namespace fleetscope::store
