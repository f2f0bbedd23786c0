#include "cupti_activity_source.h"

#include "fleetscope/agent/record_translator.h"

#include <cupti_driver_cbid.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace fleetscope::agent {
namespace {

// CUPTI's buffer callbacks are plain C functions; one source is live per process.
std::atomic<CuptiActivitySource*> g_source{nullptr};
std::atomic<size_t> g_buffer_bytes{8u << 20};

// CUPTI requires 8-byte aligned activity buffers.
constexpr size_t kAlign = 8;

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
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2", false},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER", false},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION", false},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
    {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT", false},
};

}  // namespace

CuptiActivitySource::CuptiActivitySource(CuptiApi& api, size_t buffer_bytes)
    : api_(api), buffer_bytes_(buffer_bytes) {}

CuptiActivitySource::~CuptiActivitySource() {
  CuptiActivitySource* self = this;
  g_source.compare_exchange_strong(self, nullptr);
}

void CUPTIAPI CuptiActivitySource::buffer_requested(uint8_t** buffer, size_t* size,
                                                    size_t* max_records) {
  size_t bytes = g_buffer_bytes.load();
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes));
  *size = *buffer ? bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI CuptiActivitySource::buffer_completed(CUcontext context, uint32_t stream_id,
                                                    uint8_t* buffer, size_t /*size*/,
                                                    size_t valid_size) {
  CuptiActivitySource* source = g_source.load();
  if (source && buffer) source->deliver(context, stream_id, buffer, valid_size);
  std::free(buffer);
}

void CuptiActivitySource::deliver(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                  size_t valid_size) {
  auto begin = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(deliver_mutex_);
    CUpti_Activity* record = nullptr;
    while (valid_size > 0 &&
           api_.activityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
      if (on_record_) {
        try {
          on_record_(*record);
        } catch (...) {
          // A record we cannot store is a dropped record, never an exception in CUPTI's thread.
          dropped_.fetch_add(1);
        }
      }
    }
    size_t dropped = 0;
    if (api_.activityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
      dropped_.fetch_add(static_cast<int64_t>(dropped));
  }
  handling_ns_.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin)
          .count());
}

bool CuptiActivitySource::enable(RecordCallback on_record) {
  {
    std::lock_guard lock(deliver_mutex_);
    on_record_ = std::move(on_record);
  }
  g_source.store(this);
  g_buffer_bytes.store(buffer_bytes_);
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
  enabled_.store(true);
  return true;
}

void CuptiActivitySource::flush() {
  if (enabled_.load()) api_.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CuptiActivitySource::disable() {
  for (CUpti_ActivityKind kind : enabled_kinds_) api_.activityDisable(kind);
  for (CUpti_CallbackId cbid : kDriverCbids) api_.activityEnableDriverApi(cbid, 0);
  enabled_kinds_.clear();
  if (enabled_.exchange(false)) api_.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard lock(deliver_mutex_);
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
