// A stand-in for libcupti.so.13 in tests: see stand_in_cupti.h. Records are real CUDA 13
// CUpti_Activity* structs (from the toolkit's headers), so the agent reads them exactly as it
// reads CUPTI's.
#include "stand_in_cupti.h"

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#define STANDIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Completed {
  uint8_t* buffer;
  size_t size, valid;
  int64_t kernels;
};

struct State {
  std::mutex mutex;
  std::condition_variable work;
  // subscriber
  bool subscribed = false;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::set<std::pair<int, uint32_t>> enabled_callbacks;
  std::set<int> enabled_domains;
  // activity
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::set<int> kinds;
  uint8_t* buffer = nullptr;
  size_t size = 0, used = 0;
  int64_t buffer_kernels = 0;
  size_t dropped_since_query = 0;
  std::deque<Completed> queue;
  bool hold = false;
  bool worker_started = false;
  pid_t worker_pid = 0;
  StandInState counters{};
  uint32_t correlation = 0;
  uint32_t marker_id = 0;
  int end_marker_lag_us = 0;
};

State& state() {
  static State* s = new State();  // never destroyed: threads may outlive static destruction
  return *s;
}

thread_local bool t_in_api_exit = false;
thread_local std::vector<uint32_t> t_open_markers;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

uint32_t thread_id() {
  return static_cast<uint32_t>(syscall(SYS_gettid));
}

const char* intern(const char* text) {
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard lock(mutex);
  return names->insert(text ? text : "").first->c_str();
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MARKER:
      return sizeof(CUpti_ActivityMarker2);
    default:
      return 0;
  }
}

size_t aligned(size_t n) {
  return (n + 7) / 8 * 8;
}

void worker_loop() {
  // CUPTI's own thread: never the one a process-directed signal lands on.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  State& s = state();
  std::unique_lock lock(s.mutex);
  for (;;) {
    s.work.wait(lock, [&] { return !s.queue.empty() && !s.hold; });
    Completed c = s.queue.front();
    s.queue.pop_front();
    CUpti_BuffersCallbackCompleteFunc complete = s.complete;
    s.counters.buffers_completed += 1;
    s.counters.kernels_delivered += c.kernels;
    lock.unlock();
    // Between taking a buffer off its queue and handing it over, CUPTI's thread may be slow: a
    // flush on another thread meanwhile finds the queue empty and returns before this buffer
    // arrives. STAND_IN_CUPTI_DELIVERY_DELAY_MS makes that gap as long as a test needs.
    static const int delay_ms = [] {
      const char* v = std::getenv("STAND_IN_CUPTI_DELIVERY_DELAY_MS");
      return v ? std::atoi(v) : 0;
    }();
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (complete) complete(nullptr, 0, c.buffer, c.size, c.valid);
    lock.lock();
  }
}

// Caller holds the lock. Moves the current buffer to the completion queue.
void retire_buffer(State& s) {
  if (!s.buffer) return;
  s.queue.push_back({s.buffer, s.size, s.used, s.buffer_kernels});
  s.buffer = nullptr;
  s.size = s.used = 0;
  s.buffer_kernels = 0;
  // A process forked from this one has no completion thread: start one there too.
  if (!s.worker_started || s.worker_pid != getpid()) {
    s.worker_started = true;
    s.worker_pid = getpid();
    std::thread(worker_loop).detach();
  }
  s.work.notify_all();
}

template <class Record>
void write_record(const Record& record) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.kinds.count(record.kind) || !s.request) return;
  size_t need = aligned(sizeof(Record));
  if (s.buffer && s.used + need > s.size) retire_buffer(s);
  if (!s.buffer) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    s.counters.buffers_requested += 1;
    s.request(&buffer, &size, &max_records);
    if (!buffer || size < need) {
      s.counters.buffers_declined += 1;
      s.counters.records_dropped += 1;
      s.dropped_since_query += 1;
      return;
    }
    s.buffer = buffer;
    s.size = size;
    s.used = 0;
  }
  std::memcpy(s.buffer + s.used, &record, sizeof(Record));
  s.used += need;
  s.counters.records_written += 1;
  if (record.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) s.buffer_kernels += 1;
}

bool callback_enabled(State& s, CUpti_CallbackDomain domain, uint32_t cbid) {
  return s.subscribed && s.callback &&
         (s.enabled_domains.count(domain) || s.enabled_callbacks.count({domain, cbid}));
}

void run_callback(CUpti_CallbackDomain domain, uint32_t cbid, const void* data, bool exit_site) {
  State& s = state();
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard lock(s.mutex);
    if (!callback_enabled(s, domain, cbid)) return;
    callback = s.callback;
    userdata = s.userdata;
  }
  t_in_api_exit = exit_site;
  callback(userdata, domain, cbid, data);
  t_in_api_exit = false;
}

void api_call(uint32_t cbid, const char* name, uint32_t correlation, uint64_t start) {
  CUpti_CallbackData data{};
  data.functionName = name;
  data.correlationId = correlation;
  data.callbackSite = CUPTI_API_ENTER;
  run_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data, false);
  CUpti_ActivityAPI api{};
  api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  api.cbid = cbid;
  api.start = start;
  api.end = now_ns() + 1;
  api.processId = static_cast<uint32_t>(getpid());
  api.threadId = thread_id();
  api.correlationId = correlation;
  write_record(api);
  data.callbackSite = CUPTI_API_EXIT;
  run_callback(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &data, true);
}

const char* runtime_name(uint32_t cbid) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      return "cudaLaunchKernel_v7000";
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
      return "cudaGetDevice_v3020";
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      return "cudaDeviceSynchronize_v3020";
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
      return "cudaMemcpy_v3020";
    default:
      return nullptr;
  }
}

}  // namespace

// ---- CUPTI entry points ----

STANDIN_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** text) {
  switch (result) {
    case CUPTI_SUCCESS:
      *text = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *text = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *text = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    default:
      *text = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                          CUpti_CallbackFunc callback, void* userdata) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.subscribed = true;
  s.callback = callback;
  s.userdata = userdata;
  s.enabled_callbacks.clear();
  s.enabled_domains.clear();
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  s.callback = nullptr;
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                               CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable)
    s.enabled_callbacks.insert({domain, cbid});
  else
    s.enabled_callbacks.erase({domain, cbid});
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle,
                                             CUpti_CallbackDomain domain) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.subscribed) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable)
    s.enabled_domains.insert(domain);
  else
    s.enabled_domains.erase(domain);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.request = request;
  s.complete = complete;
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.kinds.insert(kind);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.kinds.erase(kind);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId, uint8_t) {
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType) {
  return CUPTI_SUCCESS;
}

// Delivers every full buffer and (forced) the current one, on the calling thread, as CUPTI does.
STANDIN_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  State& s = state();
  std::deque<Completed> ready;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    std::lock_guard lock(s.mutex);
    if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) && s.buffer && s.used > 0) {
      s.queue.push_back({s.buffer, s.size, s.used, s.buffer_kernels});
      s.buffer = nullptr;
      s.size = s.used = 0;
      s.buffer_kernels = 0;
    }
    ready.swap(s.queue);
    complete = s.complete;
    for (const Completed& c : ready) {
      s.counters.buffers_completed += 1;
      s.counters.kernels_delivered += c.kernels;
    }
  }
  for (const Completed& c : ready)
    if (complete) complete(nullptr, 0, c.buffer, c.size, c.valid);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                      CUpti_Activity** record) {
  uint8_t* next = buffer;
  if (*record) {
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    next = reinterpret_cast<uint8_t*>(*record) + aligned(size);
  }
  if (next >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  *dropped = s.dropped_since_query;
  s.dropped_since_query = 0;
  return CUPTI_SUCCESS;
}

STANDIN_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                const char** name) {
  const char* found = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_name(cbid) : nullptr;
  if (!found) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = found;
  return CUPTI_SUCCESS;
}

// Detaches: every subscription, callback and enabled kind is gone; a later cuptiSubscribe starts
// over.
STANDIN_EXPORT CUptiResult cuptiFinalize() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.subscribed = false;
  s.callback = nullptr;
  s.enabled_callbacks.clear();
  s.enabled_domains.clear();
  s.kinds.clear();
  s.request = nullptr;
  s.complete = nullptr;
  s.buffer = nullptr;  // the client flushed before detaching; anything left is dropped
  s.size = s.used = 0;
  s.counters.finalize_calls += 1;
  if (t_in_api_exit) s.counters.finalize_in_api_exit += 1;
  return CUPTI_SUCCESS;
}

// ---- the application side ----

STANDIN_EXPORT void standin_launch_kernel(const char* name, int incomplete) {
  State& s = state();
  uint32_t correlation;
  {
    std::lock_guard lock(s.mutex);
    correlation = ++s.correlation;
  }
  uint64_t start = now_ns();
  api_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", correlation, start);
  CUpti_ActivityKernel10 kernel{};
  kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  kernel.start = start + 2000;
  kernel.end = incomplete ? 0 : start + 7000;
  kernel.deviceId = 0;
  kernel.contextId = 1;
  kernel.streamId = 7;
  kernel.correlationId = correlation;
  kernel.gridX = kernel.gridY = kernel.gridZ = 1;
  kernel.blockX = 128;
  kernel.blockY = kernel.blockZ = 1;
  kernel.name = intern(name);
  write_record(kernel);
}

STANDIN_EXPORT void standin_runtime_call(uint32_t cbid) {
  State& s = state();
  uint32_t correlation;
  {
    std::lock_guard lock(s.mutex);
    correlation = ++s.correlation;
  }
  const char* name = runtime_name(cbid);
  api_call(cbid, name ? name : "cudaUnknown", correlation, now_ns());
}

STANDIN_EXPORT void standin_nvtx_push(const char* message) {
  State& s = state();
  uint32_t id;
  {
    std::lock_guard lock(s.mutex);
    id = ++s.marker_id;
  }
  t_open_markers.push_back(id);
  nvtxRangePushA_params params{message};
  CUpti_NvtxData data{};
  data.functionName = "nvtxRangePushA";
  data.functionParams = &params;
  run_callback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &data, false);
  CUpti_ActivityMarker2 marker{};
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  marker.timestamp = now_ns();
  marker.id = id;
  marker.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  marker.objectId.pt.processId = static_cast<uint32_t>(getpid());
  marker.objectId.pt.threadId = thread_id();
  marker.name = intern(message);
  write_record(marker);
}

STANDIN_EXPORT void standin_nvtx_pop() {
  State& s = state();
  if (t_open_markers.empty()) return;
  uint32_t id = t_open_markers.back();
  t_open_markers.pop_back();
  CUpti_NvtxData data{};
  data.functionName = "nvtxRangePop";
  run_callback(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &data, false);
  int lag_us = 0;
  {
    std::lock_guard lock(s.mutex);
    lag_us = s.end_marker_lag_us;
  }
  if (lag_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(lag_us));
  CUpti_ActivityMarker2 marker{};
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  marker.timestamp = now_ns();
  marker.id = id;
  marker.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  marker.objectId.pt.processId = static_cast<uint32_t>(getpid());
  marker.objectId.pt.threadId = thread_id();
  write_record(marker);
}

STANDIN_EXPORT void standin_set_end_marker_lag_us(int lag_us) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.end_marker_lag_us = lag_us;
}

STANDIN_EXPORT void standin_hold_completions(int hold) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.hold = hold != 0;
  s.work.notify_all();
}

STANDIN_EXPORT void standin_get_state(StandInState* out) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  *out = s.counters;
  out->subscribers = s.subscribed ? 1 : 0;
  out->activity_kinds_enabled = static_cast<int>(s.kinds.size());
  out->callbacks_registered = s.request ? 1 : 0;
}
