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
