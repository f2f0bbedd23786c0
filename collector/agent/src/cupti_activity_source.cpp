#include "cupti_activity_source.h"

#include "fleetscope/agent/record_translator.h"
#include "process_state.h"

#include <cupti_driver_cbid.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace fleetscope::agent {
namespace {

// CUPTI's buffer callbacks are plain C functions; one source is live per process.
std::atomic<CuptiActivitySource*> g_source{nullptr};

// Driver calls worth a record: launches, copies, syncs and allocations (the design's "filtered
// cbids"); enabling the whole DRIVER kind would duplicate every runtime call underneath.
constexpr CUpti_CallbackId kDriverCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
};

struct KindSpec {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};
constexpr KindSpec kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
    // cudaEventRecord calls: which recording an event wait is on (RecordTranslator::cuda_event).
    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT", false},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", false},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", false},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", false},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
    {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT", false},
};

}  // namespace

CuptiActivitySource::CuptiActivitySource(CuptiApi& api, BufferPool& pool,
                                         std::function<void()> on_ready)
    : api_(api), pool_(pool), on_ready_(std::move(on_ready)) {}

CuptiActivitySource::~CuptiActivitySource() {
  CuptiActivitySource* self = this;
  g_source.compare_exchange_strong(self, nullptr);
}

void CUPTIAPI CuptiActivitySource::buffer_requested(uint8_t** buffer, size_t* size,
                                                    size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;  // as many as fit
  CuptiActivitySource* source = g_source.load();
  if (!source || g_forked_child.load()) return;
  // Past the cap the request is declined: CUPTI drops the records and counts them.
  *buffer = source->pool_.acquire();
  if (*buffer) {
    *size = source->pool_.buffer_bytes();
    source->handed_out_.fetch_add(1);
  }
}

void CUPTIAPI CuptiActivitySource::buffer_completed(CUcontext /*context*/, uint32_t /*stream_id*/,
                                                    uint8_t* buffer, size_t /*size*/,
                                                    size_t valid_size) {
  if (!buffer || g_forked_child.load()) return;
  CuptiActivitySource* source = g_source.load();
  if (source) source->queue(buffer, valid_size);
}

void CuptiActivitySource::queue(uint8_t* buffer, size_t valid_size) {
  {
    std::lock_guard lock(queue_mutex_);
    completed_.push_back({buffer, valid_size});
    ++returned_;
  }
  returned_cv_.notify_all();
  if (on_ready_) on_ready_();
}

void CuptiActivitySource::wait_for_buffers_out_before(uint64_t handed_out) {
  // Bounded: CUPTI may keep a buffer through a forced flush (one it has not written to); the
  // close then goes on after this wait, as it did without it.
  constexpr auto kFlushWaitMs = std::chrono::milliseconds(100);
  std::unique_lock lock(queue_mutex_);
  returned_cv_.wait_for(lock, kFlushWaitMs, [&] { return returned_ >= handed_out; });
}

void CuptiActivitySource::drain() {
  auto begin = std::chrono::steady_clock::now();
  for (;;) {
    Completed next{};
    {
      std::lock_guard lock(queue_mutex_);
      if (completed_.empty()) break;
      next = completed_.front();
      completed_.pop_front();
    }
    CUpti_Activity* record = nullptr;
    while (next.valid_size > 0 &&
           api_.activityGetNextRecord(next.buffer, next.valid_size, &record) == CUPTI_SUCCESS) {
      if (!on_record_) {
        ++late_records_;  // arrived after its window closed: counted, not stored
        continue;
      }
      try {
        on_record_(*record);
      } catch (...) {
        ++dropped_;  // a record we cannot store is a dropped record
      }
    }
    pool_.release(next.buffer);
  }
  size_t dropped = 0;
  if (enabled_ && api_.activityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
    dropped_ += static_cast<int64_t>(dropped);
  handling_ns_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin)
          .count();
}

std::string CuptiActivitySource::drop_reasons() const {
  std::string reasons;
  int64_t refused = pool_.refused() - refused_at_enable_;
  if (refused > 0)
    reasons = std::to_string(refused) +
              " buffer requests declined: the activity buffer pool was full (" +
              std::to_string(pool_.cap_bytes() >> 20) + " MiB cap, FLEETSCOPE_BUFFER_POOL_MB)";
  if (late_at_enable_ > 0)
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(late_at_enable_) +
               " records of the previous window arrived after it closed";
  return reasons;
}

bool CuptiActivitySource::enable(RecordCallback on_record) {
  on_record_ = nullptr;
  drain();  // buffers that came back after the last window closed: released unread
  on_record_ = std::move(on_record);
  // Records that reached the agent after the previous window had closed are reported with the
  // next window, the first place that can still record them.
  dropped_ = late_records_;
  late_at_enable_ = late_records_;
  late_records_ = 0;
  handling_ns_ = 0;
  refused_at_enable_ = pool_.refused();
  g_source.store(this);
  CUptiResult result = api_.activityRegisterCallbacks(buffer_requested, buffer_completed);
  if (result != CUPTI_SUCCESS) {
    error_ = "cuptiActivityRegisterCallbacks: " + api_.result_text(result);
    return false;
  }
  // System thread ids (gettid) so that globalTid matches what the OS and other tools show.
  api_.setThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  for (const KindSpec& spec : kKinds) {
    result = api_.activityEnable(spec.kind);
    if (result == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(spec.kind);
      continue;
    }
    if (spec.required) {
      error_ = std::string("cuptiActivityEnable(") + spec.name + "): " + api_.result_text(result);
      disable();
      return false;
    }
    unavailable_ += std::string(unavailable_.empty() ? "" : ",") + spec.name;
  }
  for (CUpti_CallbackId cbid : kDriverCbids) api_.activityEnableDriverApi(cbid, 1);
  enabled_ = true;
  return true;
}

void CuptiActivitySource::flush() {
  if (enabled_) {
    const uint64_t handed_out = handed_out_.load();
    api_.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    wait_for_buffers_out_before(handed_out);
  }
  drain();
}

void CuptiActivitySource::disable() {
  for (CUpti_ActivityKind kind : enabled_kinds_) api_.activityDisable(kind);
  for (CUpti_CallbackId cbid : kDriverCbids) api_.activityEnableDriverApi(cbid, 0);
  enabled_kinds_.clear();
  if (enabled_) {
    const uint64_t handed_out = handed_out_.load();
    api_.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // gets every buffer back
    wait_for_buffers_out_before(handed_out);
    drain();
  }
  enabled_ = false;
  on_record_ = nullptr;
}

std::string CuptiActivitySource::api_name(store::ApiClass api, uint32_t cbid) const {
  const char* name = nullptr;
  CUpti_CallbackDomain domain =
      api == store::ApiClass::runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (api_.getCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name)
    return RecordTranslator::plain_api_name(name);
  return {};
}

}  // namespace fleetscope::agent
