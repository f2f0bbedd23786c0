// A stand-in NVTX tool (as libcupti is for NVTX when the agent traces): an injection library whose
// InitializeInjectionNvtx2 installs its own nvtxRangePushA handler, which counts the pushes. The
// lanes tests use it to check that the lanes library chains to another tool instead of displacing
// it.

#include <atomic>
#include <cstdint>

namespace {

using NvtxFunctionPointer = void (*)();
using NvtxFunctionTable = NvtxFunctionPointer**;
struct ExportTableCallbacks {
  size_t struct_size;
  int (*get_module_function_table)(int module, NvtxFunctionTable* out_table,
                                   unsigned int* out_size);
};

std::atomic<int> g_pushes{0};

int count_push(const char*) {
  return ++g_pushes;
}

}  // namespace

extern "C" {

int InitializeInjectionNvtx2(const void* (*get_export_table)(uint32_t)) {
  auto* callbacks =
      static_cast<const ExportTableCallbacks*>(get_export_table(1));  // NVTX_ETID_CALLBACKS
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks || !callbacks->get_module_function_table(1, &table, &size) || size <= 9) return 0;
  *table[9] = reinterpret_cast<NvtxFunctionPointer>(&count_push);  // NVTX_CBID_CORE_RangePushA
  return 1;
}

int stand_in_nvtx_tool_pushes() {
  return g_pushes.load();
}

}  // extern "C"
