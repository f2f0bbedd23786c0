// Translation of CUPTI activity records (CUDA 13 layouts) into store rows. Stateful because some
// rows need two records: an NVTX range is a START and an END marker with the same id, and a
// synchronization record names a context whose device only context/kernel records tell.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "fleetscope/agent/row_sink.h"
#include "fleetscope/agent/runtime_filter.h"
#include "fleetscope/agent/step_names.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::agent {

using ApiNameFn = std::function<std::string(store::ApiClass, uint32_t cbid)>;

struct TranslationContext {
  int64_t captureId = 0;
  int64_t pid = 0;  // the traced process (records of kinds without a process id get this one)
  StepNames step_names;
  ApiNameFn api_name;  // may be empty: names become "cbid:<N>"
  // Runtime calls not stored (runtime_filter.h); empty = keep every call.
  RuntimeFilter runtime_filter = RuntimeFilter(std::vector<std::string>{});
};

struct TranslationStats {
  int64_t records = 0;
  int64_t kernels = 0, memcpys = 0, memsets = 0, api_calls = 0, syncs = 0, markers = 0,
          memory_events = 0, external_correlations = 0, overhead_records = 0, cuda_events = 0,
          ignored = 0;
  int64_t overhead_ns = 0;            // sum of CUPTI OVERHEAD record durations
  int64_t first_ns = 0, last_ns = 0;  // span of GPU/API activity seen (0 when none)
  int64_t unmatched_markers = 0;      // START without END (or END without START) at finish()
  // Timed records whose start or end CUPTI had not filled in (a forced flush returns kernels and
  // copies still in flight with end = 0): dropped, since a zero end would give a duration of about
  // -1.7e18 ns and poison every utilization figure.
  int64_t incomplete = 0;
  int64_t filtered = 0;  // runtime calls left out by the runtime filter
  int64_t stored = 0;    // rows handed to the sink
};

// The end of a step as the agent saw it in its NVTX pop callback: on application thread
// `thread_id` (the system thread id, as CUPTI records it), at `end_ns` (CUPTI's clock).
struct ObservedStepEnd {
  int64_t end_ns = 0;
  uint32_t thread_id = 0;
};

class RecordTranslator {
 public:
  RecordTranslator(TranslationContext context, RowSink& sink);
  // Translates one record; kinds the agent does not store are counted as ignored.
  void translate(const CUpti_Activity& record);
  // Ranges still open when the window ends are dropped and counted as unmatched, except the step
  // the window closed at (`closing_step`): the agent stops CUPTI as soon as it hears of that
  // step's pop, and CUPTI may record the range's END marker only after the pop's callbacks
  // returned, when its kinds are already disabled. That step is ended where the agent saw it end,
  // so the last iteration of an iteration window is never lost.
  void finish(const std::optional<ObservedStepEnd>& closing_step = std::nullopt);
  const TranslationStats& stats() const { return stats_; }

  // Demangled kernel name (the record carries the mangled one); the input when not mangled.
  static std::string demangle(const char* name);
  // CUPTI's callback names carry a version suffix ("cudaLaunchKernel_v7000", "cuMemAlloc_v2");
  // nsys and users know the plain API name.
  static std::string plain_api_name(std::string name);

 private:
  void kernel(const CUpti_ActivityKernel10& r);
  void memcpy(const CUpti_ActivityMemcpy6& r);
  void peer_memcpy(const CUpti_ActivityMemcpyPtoP4& r);
  void memset(const CUpti_ActivityMemset4& r);
  void api(const CUpti_ActivityAPI& r, store::ApiClass api_class);
  void sync(const CUpti_ActivitySynchronization2& r);
  void cuda_event(const CUpti_ActivityCudaEvent2& r);
  struct EventRecording {
    int64_t correlation = 0;
    std::optional<int32_t> stream;
  };
  const EventRecording* recording_waited_on(const CUpti_ActivitySynchronization2& r) const;
  void marker(const CUpti_ActivityMarker2& r);
  void memory(const CUpti_ActivityMemory4& r);
  void external(const CUpti_ActivityExternalCorrelation& r);
  void overhead(const CUpti_ActivityOverhead3& r);
  void context(const CUpti_ActivityContext3& r);
  void span(uint64_t start, uint64_t end);
  bool complete(uint64_t start, uint64_t end);
  bool filtered(uint32_t cbid);
  template <class Row>
  void emit(Row&& row);
  // A row of a GPU-activity table (kernel, memcpy, memset) with the columns they share filled.
  template <class Row, class Record>
  Row gpu_activity(const Record& r);
  template <class Record>
  store::Memcpy copy(const Record& r);
  int32_t domain_id(const char* domain);
  void step(const std::string& name, int64_t start, int64_t end);

  struct OpenRange {
    int64_t start = 0;
    std::string text;
    int32_t domainId = 0;
    std::optional<int64_t> globalTid;
  };
  void end_range(const OpenRange& open, int64_t end, std::optional<int64_t> end_tid,
                 uint32_t range_id);
  void end_closing_step(const ObservedStepEnd& closing_step);

  TranslationContext context_;
  RowSink& sink_;
  TranslationStats stats_;
  std::unordered_map<uint32_t, OpenRange> open_ranges_;
  std::unordered_map<uint32_t, int32_t> context_device_;
  std::unordered_map<uint64_t, EventRecording> latest_recording_;      // (context << 32) | event id
  std::unordered_map<uint64_t, EventRecording> recording_by_sync_id_;  // CUPTI cudaEventSyncId
  std::map<std::string, int32_t> domains_;
  std::unordered_map<uint32_t, bool> filter_decisions_;
  int64_t next_unnumbered_step_ = 0;
};

}  // namespace fleetscope::agent
