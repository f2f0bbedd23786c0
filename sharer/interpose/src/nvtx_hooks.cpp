// NVTX step ranges as iteration boundaries, for jobs that mark their steps with NVTX instead of
// the step API (PyTorch: torch.cuda.nvtx.range_push("step"), or "ProfilerStep#N" under
// emit_nvtx). NVTX v3 is header-only in the job: on first use it dlopen()s the library named in
// NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2 with a function that hands out the
// job's NVTX function-pointer slots (nvtxDetail/nvtxInit.h, nvtxTypes.h of the CUDA toolkit).
//
// This library is such an injection library, and it chains: the NVTX loader finds the init function
// with dlsym, which we interpose, so when NVTX_INJECTION64_PATH names another tool (the fleetscope
// agent sets it to libcupti for tracing) the loader gets our init instead; it first runs the other
// tool's init, then wraps the range-push/start slots, calling whatever the tool installed.

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fleetscope/lanes/step_range_names.h"
#include "lane_state.h"

namespace {

using NvtxFunctionPointer = void (*)();
using NvtxFunctionTable = NvtxFunctionPointer**;
using GetExportTable = const void* (*)(uint32_t);
using InitializeInjection = int (*)(GetExportTable);

struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(int module, NvtxFunctionTable* out_table,
                                   unsigned int* out_size);
};

// Values from nvtxTypes.h.
constexpr uint32_t kExportTableCallbacks = 1;  // NVTX_ETID_CALLBACKS
constexpr int kModuleCore = 1;                 // NVTX_CB_MODULE_CORE
constexpr int kModuleCore2 = 5;                // NVTX_CB_MODULE_CORE2
constexpr unsigned kCoreRangeStartEx = 4, kCoreRangeStartA = 5, kCoreRangePushEx = 8,
                   kCoreRangePushA = 9;
constexpr unsigned kCore2RangeStartEx = 2, kCore2RangePushEx = 4;
constexpr int kMessageAscii = 1;  // NVTX_MESSAGE_TYPE_ASCII

// The leading fields of nvtxEventAttributes_t (version 2/3 layout) up to the message.
struct EventAttributes {
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;
  const char* message;
};

std::atomic<InitializeInjection> g_chained{nullptr};
// What the chained tool installed in each slot we wrap (nullptr: nothing).
NvtxFunctionPointer g_next_push_a, g_next_push_ex, g_next_start_a, g_next_start_ex,
    g_next_domain_push_ex, g_next_domain_start_ex;

const fleetscope::lanes::StepRangeNames& step_names() {
  static const auto* names = new fleetscope::lanes::StepRangeNames(
      std::getenv("FLEETSCOPE_STEP_NAMES") ? std::getenv("FLEETSCOPE_STEP_NAMES") : "");
  return *names;
}

void boundary_if_step(const char* name) {
  if (!step_names().matches(name)) return;
  if (auto* gate = fleetscope::interpose::LaneState::instance().gate()) gate->boundary();
}

const char* ascii_message(const void* attributes) {
  auto* event = static_cast<const EventAttributes*>(attributes);
  if (!event || event->size < sizeof(EventAttributes) || event->message_type != kMessageAscii)
    return nullptr;
  return event->message;
}

int push_a(const char* message) {
  boundary_if_step(message);
  return g_next_push_a ? reinterpret_cast<int (*)(const char*)>(g_next_push_a)(message) : 0;
}
int push_ex(const void* attributes) {
  boundary_if_step(ascii_message(attributes));
  return g_next_push_ex ? reinterpret_cast<int (*)(const void*)>(g_next_push_ex)(attributes) : 0;
}
uint64_t start_a(const char* message) {
  boundary_if_step(message);
  return g_next_start_a ? reinterpret_cast<uint64_t (*)(const char*)>(g_next_start_a)(message) : 0;
}
uint64_t start_ex(const void* attributes) {
  boundary_if_step(ascii_message(attributes));
  return g_next_start_ex ? reinterpret_cast<uint64_t (*)(const void*)>(g_next_start_ex)(attributes)
                         : 0;
}
int domain_push_ex(void* domain, const void* attributes) {
  boundary_if_step(ascii_message(attributes));
  return g_next_domain_push_ex ? reinterpret_cast<int (*)(void*, const void*)>(
                                     g_next_domain_push_ex)(domain, attributes)
                               : 0;
}
uint64_t domain_start_ex(void* domain, const void* attributes) {
  boundary_if_step(ascii_message(attributes));
  return g_next_domain_start_ex ? reinterpret_cast<uint64_t (*)(void*, const void*)>(
                                      g_next_domain_start_ex)(domain, attributes)
                                : 0;
}

struct Wrap {
  int module;
  unsigned slot;
  NvtxFunctionPointer* next;
  NvtxFunctionPointer ours;
};

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int InitializeInjectionNvtx2(GetExportTable get_export_table) {
  if (!get_export_table) return 0;
  auto* callbacks =
      static_cast<const ExportTableCallbacks*>(get_export_table(kExportTableCallbacks));
  if (!callbacks || !callbacks->get_module_function_table) return 0;
  const Wrap wraps[] = {
      {kModuleCore, kCoreRangePushA, &g_next_push_a,
       reinterpret_cast<NvtxFunctionPointer>(&push_a)},
      {kModuleCore, kCoreRangePushEx, &g_next_push_ex,
       reinterpret_cast<NvtxFunctionPointer>(&push_ex)},
      {kModuleCore, kCoreRangeStartA, &g_next_start_a,
       reinterpret_cast<NvtxFunctionPointer>(&start_a)},
      {kModuleCore, kCoreRangeStartEx, &g_next_start_ex,
       reinterpret_cast<NvtxFunctionPointer>(&start_ex)},
      {kModuleCore2, kCore2RangePushEx, &g_next_domain_push_ex,
       reinterpret_cast<NvtxFunctionPointer>(&domain_push_ex)},
      {kModuleCore2, kCore2RangeStartEx, &g_next_domain_start_ex,
       reinterpret_cast<NvtxFunctionPointer>(&domain_start_ex)},
  };
  constexpr size_t kWraps = sizeof(wraps) / sizeof(wraps[0]);
  // The slot pointers, and what they hold before the chained tool runs (NVTX's own init stubs):
  // a slot the tool leaves alone still holds its stub afterwards, and must not be called.
  NvtxFunctionPointer* slots[kWraps] = {};
  NvtxFunctionPointer before[kWraps] = {};
  for (size_t i = 0; i < kWraps; ++i) {
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    if (callbacks->get_module_function_table(wraps[i].module, &table, &size) && table &&
        wraps[i].slot < size) {
      slots[i] = table[wraps[i].slot];
      if (slots[i]) before[i] = *slots[i];
    }
  }
  if (InitializeInjection chained = g_chained.load(std::memory_order_acquire)) {
    if (!chained(get_export_table))
      return 0;  // the other tool failed: NVTX rolls back, as without us
  }
  for (size_t i = 0; i < kWraps; ++i) {
    if (!slots[i]) continue;
    NvtxFunctionPointer installed = *slots[i];
    *wraps[i].next = installed != before[i] ? installed : nullptr;
    *slots[i] = wraps[i].ours;
  }
  return 1;
}

#pragma GCC visibility pop
}  // extern "C"

namespace fleetscope::interpose {

// Called by the dlsym dispatch when the NVTX loader looks up another library's init function.
void* chain_nvtx_injection(void* real_init) {
  if (real_init && real_init != reinterpret_cast<void*>(&InitializeInjectionNvtx2)) {
    g_chained.store(reinterpret_cast<InitializeInjection>(real_init), std::memory_order_release);
  }
  return reinterpret_cast<void*>(&InitializeInjectionNvtx2);
}

}  // namespace fleetscope::interpose
