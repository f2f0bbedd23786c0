#include "fleetscope/agent/record_translator.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace fleetscope::agent {
namespace {

constexpr int64_t ns(uint64_t t) {
  return static_cast<int64_t>(t);
}

// CUPTI marks "not applicable" fields with all-ones.
std::optional<int32_t> valid_u32(uint32_t v) {
  if (v == CUPTI_SYNCHRONIZATION_INVALID_VALUE) return std::nullopt;
  return static_cast<int32_t>(v);
}
// Graph ids are 0 for work not launched from a graph.
std::optional<int64_t> nonzero(uint64_t v) {
  if (v == 0) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

RecordTranslator::RecordTranslator(TranslationContext context, RowSink& sink)
    : context_(std::move(context)), sink_(sink) {}

std::string RecordTranslator::demangle(const char* name) {
  if (!name) return "<unnamed kernel>";
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  if (status == 0 && out) return out.get();
  return name;
}

std::string RecordTranslator::plain_api_name(std::string name) {
  if (auto pos = name.rfind("_v");
      pos != std::string::npos && pos + 2 < name.size() &&
      name.find_first_not_of("0123456789", pos + 2) == std::string::npos)
    name.erase(pos);
  return name;
}

// Whether the runtime filter drops a callback id; decided once per id (the name lookup is not
// free).
bool RecordTranslator::filtered(uint32_t cbid) {
  if (context_.runtime_filter.empty()) return false;
  auto [it, inserted] = filter_decisions_.try_emplace(cbid, false);
  if (inserted) {
    std::string name =
        context_.api_name ? context_.api_name(store::ApiClass::runtime, cbid) : std::string();
    if (name.empty()) name = RuntimeFilter::known_name(cbid);
    it->second = context_.runtime_filter.drops(plain_api_name(name));
  }
  return it->second;
}

// A timed record is complete when CUPTI filled in both timestamps in order.
bool RecordTranslator::complete(uint64_t start, uint64_t end) {
  if (start != 0 && end != 0 && end >= start) return true;
  ++stats_.incomplete;
  return false;
}

void RecordTranslator::translate(const CUpti_Activity& record) {
  ++stats_.records;
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      peer_memcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      api(reinterpret_cast<const CUpti_ActivityAPI&>(record), store::ApiClass::runtime);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      api(reinterpret_cast<const CUpti_ActivityAPI&>(record), store::ApiClass::driver);
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      cuda_event(reinterpret_cast<const CUpti_ActivityCudaEvent2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      memory(reinterpret_cast<const CUpti_ActivityMemory4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      external(reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      overhead(reinterpret_cast<const CUpti_ActivityOverhead3&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_CONTEXT:
      context(reinterpret_cast<const CUpti_ActivityContext3&>(record));
      break;
    default:
      ++stats_.ignored;
      break;
  }
}

void RecordTranslator::span(uint64_t start, uint64_t end) {
  if (start == 0) return;
  if (stats_.first_ns == 0 || ns(start) < stats_.first_ns) stats_.first_ns = ns(start);
  if (ns(end) > stats_.last_ns) stats_.last_ns = ns(end);
}

// The columns the GPU-activity tables share (schema/tables.py, gpu_activity), from the fields
// their CUPTI records share.
template <class Row, class Record>
Row RecordTranslator::gpu_activity(const Record& r) {
  span(r.start, r.end);
  Row row;
  row.start = ns(r.start);
  row.end = ns(r.end);
  row.deviceId = static_cast<int32_t>(r.deviceId);
  row.contextId = static_cast<int32_t>(r.contextId);
  row.streamId = static_cast<int32_t>(r.streamId);
  row.correlationId = r.correlationId;
  row.globalPid = store::global_pid(context_.pid);
  row.captureId = context_.captureId;
  return row;
}

void RecordTranslator::kernel(const CUpti_ActivityKernel10& r) {
  if (!complete(r.start, r.end)) return;
  ++stats_.kernels;
  context_device_[r.contextId] = static_cast<int32_t>(r.deviceId);
  auto k = gpu_activity<store::Kernel>(r);
  k.demangledName = demangle(r.name);
  k.shortName = "";  // the writer derives it from the demangled name
  k.gridX = r.gridX;
  k.gridY = r.gridY;
  k.gridZ = r.gridZ;
  k.blockX = r.blockX;
  k.blockY = r.blockY;
  k.blockZ = r.blockZ;
  k.registersPerThread = r.registersPerThread;
  k.staticSharedMemory = r.staticSharedMemory;
  k.dynamicSharedMemory = r.dynamicSharedMemory;
  k.localMemoryPerThread = static_cast<int32_t>(r.localMemoryPerThread);
  k.graphId = nonzero(r.graphId);
  k.graphNodeId = nonzero(r.graphNodeId);
  k.launchType = r.launchType;
  k.gridId = r.gridId;
  emit(std::move(k));
}

// Copies within a device and between peers share these columns.
template <class Record>
store::Memcpy RecordTranslator::copy(const Record& r) {
  ++stats_.memcpys;
  auto m = gpu_activity<store::Memcpy>(r);
  m.bytes = static_cast<int64_t>(r.bytes);
  m.copyKind = r.copyKind;
  m.srcKind = r.srcKind;
  m.dstKind = r.dstKind;
  m.graphNodeId = nonzero(r.graphNodeId);
  return m;
}

void RecordTranslator::memcpy(const CUpti_ActivityMemcpy6& r) {
  if (!complete(r.start, r.end)) return;
  context_device_[r.contextId] = static_cast<int32_t>(r.deviceId);
  emit(copy(r));
}

void RecordTranslator::peer_memcpy(const CUpti_ActivityMemcpyPtoP4& r) {
  if (!complete(r.start, r.end)) return;
  auto m = copy(r);
  m.srcDeviceId = static_cast<int32_t>(r.srcDeviceId);
  m.dstDeviceId = static_cast<int32_t>(r.dstDeviceId);
  emit(std::move(m));
}

void RecordTranslator::memset(const CUpti_ActivityMemset4& r) {
  if (!complete(r.start, r.end)) return;
  ++stats_.memsets;
  context_device_[r.contextId] = static_cast<int32_t>(r.deviceId);
  auto m = gpu_activity<store::Memset>(r);
  m.value = static_cast<int32_t>(r.value);
  m.bytes = static_cast<int64_t>(r.bytes);
  m.memKind = r.memoryKind;
  m.graphNodeId = nonzero(r.graphNodeId);
  emit(std::move(m));
}

void RecordTranslator::api(const CUpti_ActivityAPI& r, store::ApiClass api_class) {
  if (api_class == store::ApiClass::runtime && filtered(r.cbid)) {
    ++stats_.filtered;
    return;
  }
  if (!complete(r.start, r.end)) return;
  ++stats_.api_calls;
  span(r.start, r.end);
  store::RuntimeCall c;
  c.start = ns(r.start);
  c.end = ns(r.end);
  c.eventClass = api_class;
  c.globalTid = store::global_tid(r.processId, r.threadId);
  c.correlationId = r.correlationId;
  std::string name = context_.api_name ? context_.api_name(api_class, r.cbid) : std::string();
  c.name = name.empty() ? "cbid:" + std::to_string(r.cbid) : std::move(name);
  c.returnValue = static_cast<int32_t>(r.returnValue);
  c.cbid = static_cast<int32_t>(r.cbid);
  c.captureId = context_.captureId;
  emit(std::move(c));
}

void RecordTranslator::sync(const CUpti_ActivitySynchronization2& r) {
  if (!complete(r.start, r.end)) return;
  ++stats_.syncs;
  span(r.start, r.end);
  store::Sync s;
  s.start = ns(r.start);
  s.end = ns(r.end);
  if (auto it = context_device_.find(r.contextId); it != context_device_.end())
    s.deviceId = it->second;
  s.contextId = valid_u32(r.contextId);
  s.streamId = valid_u32(r.streamId);
  s.correlationId = r.correlationId;
  s.globalPid = store::global_pid(context_.pid);
  s.syncType = static_cast<int32_t>(r.type);
  if (auto event = valid_u32(r.cudaEventId)) s.eventId = *event;
  if (r.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
      r.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) {
    if (const EventRecording* recording = recording_waited_on(r)) {
      s.eventRecordCorrelationId = recording->correlation;
      s.eventRecordStreamId = recording->stream;
    }
  }
  s.captureId = context_.captureId;
  emit(std::move(s));
}

// A cudaEventRecord: which call recorded the event on which stream, for the waits on it (the
// critical path's cross-stream edges). Kineto keeps the same (CuptiActivityProfiler.cpp,
// waitEventMap: (context, event id) -> the latest recording's stream and correlation).
void RecordTranslator::cuda_event(const CUpti_ActivityCudaEvent2& r) {
  ++stats_.cuda_events;
  const EventRecording recording{static_cast<int64_t>(r.correlationId), valid_u32(r.streamId)};
  latest_recording_[(uint64_t{r.contextId} << 32) | r.eventId] = recording;
  if (r.cudaEventSyncId != 0 && r.cudaEventSyncId != ~uint64_t{0})
    recording_by_sync_id_[r.cudaEventSyncId] = recording;
}

// The recording a wait is on: by CUPTI's cudaEventSyncId, which names the very recording (an
// event re-recorded before the wait is otherwise ambiguous), else, as Kineto does, the latest
// recording of the (context, event) seen so far. CUPTI emits the CUDA_EVENT record at the
// cudaEventRecord call, before any wait on it completes.
const RecordTranslator::EventRecording* RecordTranslator::recording_waited_on(
    const CUpti_ActivitySynchronization2& r) const {
  if (r.cudaEventSyncId != 0 && r.cudaEventSyncId != ~uint64_t{0}) {
    if (auto it = recording_by_sync_id_.find(r.cudaEventSyncId); it != recording_by_sync_id_.end())
      return &it->second;
  }
  if (r.cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE) return nullptr;
  auto it = latest_recording_.find((uint64_t{r.contextId} << 32) | r.cudaEventId);
  return it == latest_recording_.end() ? nullptr : &it->second;
}

int32_t RecordTranslator::domain_id(const char* domain) {
  if (!domain || !*domain) return 0;
  auto [it, inserted] = domains_.try_emplace(domain, static_cast<int32_t>(domains_.size() + 1));
  return it->second;
}

void RecordTranslator::marker(const CUpti_ActivityMarker2& r) {
  ++stats_.markers;
  std::optional<int64_t> tid;
  if (r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
    tid = store::global_tid(r.objectId.pt.processId, r.objectId.pt.threadId);
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    store::NvtxEvent e;
    e.start = ns(r.timestamp);
    e.eventType = store::kNvtxMark;
    e.text = r.name ? r.name : "";
    e.domainId = domain_id(r.domain);
    e.globalTid = tid;
    e.captureId = context_.captureId;
    emit(std::move(e));
    return;
  }
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    open_ranges_[r.id] = OpenRange{ns(r.timestamp), r.name ? r.name : "", domain_id(r.domain), tid};
    return;
  }
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(r.id);
    if (it == open_ranges_.end()) {
      ++stats_.unmatched_markers;
      return;
    }
    OpenRange open = std::move(it->second);
    open_ranges_.erase(it);
    end_range(open, ns(r.timestamp), tid, r.id);
  }
}

void RecordTranslator::end_range(const OpenRange& open, int64_t end, std::optional<int64_t> end_tid,
                                 uint32_t range_id) {
  store::NvtxEvent e;
  e.start = open.start;
  e.end = end;
  // CUPTI reports push/pop and start/end ranges alike; a range that ends on another thread
  // can only be a start/end range, so only those keep their id.
  bool same_thread = open.globalTid == end_tid;
  e.eventType = same_thread ? store::kNvtxPushPopRange : store::kNvtxStartEndRange;
  if (!same_thread) e.rangeId = range_id;
  e.text = open.text;
  e.domainId = open.domainId;
  e.globalTid = open.globalTid;
  e.captureId = context_.captureId;
  step(e.text, e.start, *e.end);
  emit(std::move(e));
}

// The innermost step range still open on the thread that popped it: the one the pop ended.
void RecordTranslator::end_closing_step(const ObservedStepEnd& closing_step) {
  const int64_t tid = store::global_tid(context_.pid, closing_step.thread_id);
  auto found = open_ranges_.end();
  for (auto it = open_ranges_.begin(); it != open_ranges_.end(); ++it) {
    const OpenRange& open = it->second;
    if (open.globalTid != tid || open.start > closing_step.end_ns) continue;
    if (!context_.step_names.match(open.text)) continue;
    if (found == open_ranges_.end() || open.start > found->second.start) found = it;
  }
  if (found == open_ranges_.end()) return;  // its END marker arrived, or its START never did
  OpenRange open = std::move(found->second);
  uint32_t range_id = found->first;
  open_ranges_.erase(found);
  end_range(open, closing_step.end_ns, tid, range_id);
}

void RecordTranslator::step(const std::string& name, int64_t start, int64_t end) {
  auto match = context_.step_names.match(name);
  if (!match) return;
  store::Iteration it;
  it.captureId = context_.captureId;
  it.globalPid = store::global_pid(context_.pid);
  it.step = match->number ? *match->number : next_unnumbered_step_++;
  it.start = start;
  it.end = end;
  it.source = match->numbered_prefix ? "ProfilerStep" : "nvtx";
  emit(std::move(it));
}

void RecordTranslator::memory(const CUpti_ActivityMemory4& r) {
  ++stats_.memory_events;
  store::MemoryEvent m;
  m.ts = ns(r.timestamp);
  m.captureId = context_.captureId;
  m.globalPid = store::global_pid(r.processId);
  bool host = r.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
              r.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.deviceId = host ? -1 : static_cast<int32_t>(r.deviceId);
  m.address = static_cast<int64_t>(r.address);
  int64_t bytes = static_cast<int64_t>(r.bytes);
  m.bytes = r.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? -bytes : bytes;
  emit(std::move(m));
}

void RecordTranslator::external(const CUpti_ActivityExternalCorrelation& r) {
  ++stats_.external_correlations;
  emit(ExternalCorrelation{context_.captureId, r.correlationId,
                           static_cast<int32_t>(r.externalKind),
                           static_cast<int64_t>(r.externalId)});
}

void RecordTranslator::overhead(const CUpti_ActivityOverhead3& r) {
  ++stats_.overhead_records;
  if (r.end > r.start) stats_.overhead_ns += ns(r.end - r.start);
}

void RecordTranslator::context(const CUpti_ActivityContext3& r) {
  context_device_[r.contextId] = static_cast<int32_t>(r.deviceId);
}

template <class Row>
void RecordTranslator::emit(Row&& row) {
  ++stats_.stored;
  sink_.add(std::forward<Row>(row));
}

void RecordTranslator::finish(const std::optional<ObservedStepEnd>& closing_step) {
  if (closing_step) end_closing_step(*closing_step);
  stats_.unmatched_markers += static_cast<int64_t>(open_ranges_.size());
  open_ranges_.clear();
}

}  // namespace fleetscope::agent
