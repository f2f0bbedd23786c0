// A finding's evidence as the GUI shows it (the analyzer writes it as JSON, rules_builtin.cpp):
// the offending events it lists ("offending_events": kind, name, start, end, device and stream),
// each found on the capture's timeline; the tight "focus" window around the worst instance; and
// the other evidence fields as readable rows: times from the capture's start, durations in
// units, shares in percent, offenders as "name ×count (total)".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetscope/store/rows.h"
#include "table_model.h"
#include "timeline_data.h"

namespace fleetscope::gui {

struct EvidenceEvent {
  std::string kind, name;  // kind: kernel, memcpy, memset, runtime (a CUDA API call), cpu_op
  int64_t start = 0, end = 0;
  int32_t device = -1, stream = -1;  // GPU events
  int64_t global_tid = -1;           // host events
  // On the timeline, when found there (raw events loaded, same track, start, end and kind).
  std::optional<size_t> track;
  int64_t event = -1;
};

struct FindingEvidence {
  std::vector<EvidenceEvent> events;
  std::optional<TimeRange> focus;
  std::vector<std::pair<std::string, std::string>> fields;
};

// `data` may be null or hold no raw events yet (then no event is found); `capture_start` is the
// origin of the readable times (the timeline's span start).
FindingEvidence finding_evidence(const store::Finding& finding, const TimelineData* data,
                                 int64_t capture_start);
// The event of `data` with this kind, track (GPU stream, or the thread's CUDA API or CPU-op
// track) and times, if any.
std::optional<std::pair<size_t, int64_t>> find_event(const TimelineData& data,
                                                     const EvidenceEvent& e);

class EvidenceModel : public RowTableModel<EvidenceEvent> {
 public:
  enum Column { kind, name, start, duration, track };
  explicit EvidenceModel(QObject* parent = nullptr);
  void set_origin(int64_t capture_start) { origin_ = capture_start; }

 protected:
  QVariant cell(const EvidenceEvent& row, int column, int role) const override;

 private:
  int64_t origin_ = 0;
};

}  // namespace fleetscope::gui
