// The interposed dlsym's dispatch, the table of wrapped entry points, and real-symbol resolution.

#include <dlfcn.h>

#include <cstring>

#include "hook_table.h"
#include "real_symbols.h"

extern "C" {
void* fleetscope_lanes_next_dlsym = nullptr;
}

namespace fleetscope::interpose {
namespace {

HookEntry g_hooks[] = {
    {"cuGetProcAddress",
     "cuGetProcAddress",
     0,
     11999,
     false,
     reinterpret_cast<void*>(&::cuGetProcAddress),
     {}},
    {"cuGetProcAddress_v2",
     "cuGetProcAddress",
     12000,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuGetProcAddress_v2),
     {}},
    {"cuMemAlloc_v2",
     "cuMemAlloc",
     3020,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemAlloc_v2),
     {}},
    {"cuMemAllocManaged",
     "cuMemAllocManaged",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemAllocManaged),
     {}},
    {"cuMemAllocPitch_v2",
     "cuMemAllocPitch",
     3020,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemAllocPitch_v2),
     {}},
    {"cuMemFree_v2",
     "cuMemFree",
     3020,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemFree_v2),
     {}},
    {"cuMemGetInfo_v2",
     "cuMemGetInfo",
     3020,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemGetInfo_v2),
     {}},
    {"cuMemAllocAsync",
     "cuMemAllocAsync",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemAllocAsync),
     {}},
    {"cuMemAllocAsync_ptsz",
     "cuMemAllocAsync",
     0,
     1 << 30,
     true,
     reinterpret_cast<void*>(&::cuMemAllocAsync_ptsz),
     {}},
    {"cuMemAllocFromPoolAsync",
     "cuMemAllocFromPoolAsync",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemAllocFromPoolAsync),
     {}},
    {"cuMemAllocFromPoolAsync_ptsz",
     "cuMemAllocFromPoolAsync",
     0,
     1 << 30,
     true,
     reinterpret_cast<void*>(&::cuMemAllocFromPoolAsync_ptsz),
     {}},
    {"cuMemFreeAsync",
     "cuMemFreeAsync",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemFreeAsync),
     {}},
    {"cuMemFreeAsync_ptsz",
     "cuMemFreeAsync",
     0,
     1 << 30,
     true,
     reinterpret_cast<void*>(&::cuMemFreeAsync_ptsz),
     {}},
    {"cuMemPoolTrimTo",
     "cuMemPoolTrimTo",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemPoolTrimTo),
     {}},
    {"cuMemCreate", "cuMemCreate", 0, 1 << 30, false, reinterpret_cast<void*>(&::cuMemCreate), {}},
    {"cuMemRelease",
     "cuMemRelease",
     0,
     1 << 30,
     false,
     reinterpret_cast<void*>(&::cuMemRelease),
     {}},
    {"nvmlDeviceGetMemoryInfo",
     nullptr,
     0,
     0,
     false,
     reinterpret_cast<void*>(&::nvmlDeviceGetMemoryInfo),
     {}},
    {"nvmlDeviceGetMemoryInfo_v2",
     nullptr,
     0,
     0,
     false,
     reinterpret_cast<void*>(&::nvmlDeviceGetMemoryInfo_v2),
     {}},
};
static_assert(sizeof(g_hooks) / sizeof(g_hooks[0]) == static_cast<size_t>(Hook::kCount));

// The handles the job opened the driver and NVML with (first one seen wins).
std::atomic<void*> g_cuda_handle{nullptr};
std::atomic<void*> g_nvml_handle{nullptr};

bool starts_with(const char* text, const char* prefix) {
  return std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

// `ours` is our wrapper of that name: a handle whose scope includes this library (the program's
// own, dlopen(NULL)) would answer with it, which is not the real function.
void* find_real(std::atomic<void*>& remembered_handle, const char* library, const char* name,
                void* ours) {
  DlsymFunction lookup = libc_dlsym();
  if (!lookup) return nullptr;
  if (void* handle = remembered_handle.load(std::memory_order_acquire)) {
    void* symbol = lookup(handle, name);
    if (symbol && symbol != ours) return symbol;
  }
  // Called from this library, RTLD_NEXT means "after us": the job's libcuda when it links it.
  if (void* symbol = lookup(RTLD_NEXT, name)) return symbol;
  // The library is loaded but not visible in our scope (dlopen'ed RTLD_LOCAL): take a reference
  // to the loaded copy only, never load one ourselves.
  if (void* handle = ::dlopen(library, RTLD_LAZY | RTLD_NOLOAD)) {
    void* expected = nullptr;
    if (!remembered_handle.compare_exchange_strong(expected, handle)) ::dlclose(handle);
    void* symbol = lookup(remembered_handle.load(), name);
    return symbol != ours ? symbol : nullptr;
  }
  return nullptr;
}

}  // namespace

DlsymFunction libc_dlsym() {
  return reinterpret_cast<DlsymFunction>(fleetscope_lanes_resolve_next_dlsym());
}

void* real_cuda_symbol(const char* name) {
  return find_real(g_cuda_handle, "libcuda.so.1", name, nullptr);
}

void* real_nvml_symbol(const char* name) {
  return find_real(g_nvml_handle, "libnvidia-ml.so.1", name, nullptr);
}

HookEntry& hook_entry(Hook hook) {
  return g_hooks[static_cast<int>(hook)];
}

HookEntry* find_hook(const char* name) {
  for (auto& entry : g_hooks) {
    if (std::strcmp(entry.exported_name, name) == 0) return &entry;
  }
  return nullptr;
}

void note_real(HookEntry& entry, void* real) {
  if (real && real != entry.wrapper) entry.real.store(real, std::memory_order_release);
}

void* resolve_real(HookEntry& entry) {
  void* real =
      entry.base_name
          ? find_real(g_cuda_handle, "libcuda.so.1", entry.exported_name, entry.wrapper)
          : find_real(g_nvml_handle, "libnvidia-ml.so.1", entry.exported_name, entry.wrapper);
  note_real(entry, real);
  return entry.real.load(std::memory_order_acquire);
}

void* substitute_proc_address(const char* base_name, void* real, int version, cuuint64_t flags) {
  if (!base_name || !real) return real;
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  HookEntry* by_flags = nullptr;
  for (auto& entry : g_hooks) {
    if (!entry.base_name || std::strcmp(entry.base_name, base_name) != 0) continue;
    if (version < entry.min_version || version > entry.max_version) continue;
    if (real == entry.real.load(std::memory_order_acquire) || real == entry.wrapper)
      return entry.wrapper;
    if (entry.per_thread_stream == per_thread) by_flags = &entry;
  }
  if (!by_flags) return real;  // a variant we do not wrap (e.g. the 32-bit cuMemAlloc of CUDA 3.1)
  note_real(*by_flags, real);
  return by_flags->wrapper;
}

}  // namespace fleetscope::interpose

using namespace fleetscope::interpose;

extern "C" void* fleetscope_lanes_resolve_next_dlsym() {
  void* known = __atomic_load_n(&fleetscope_lanes_next_dlsym, __ATOMIC_ACQUIRE);
  if (known) return known;
  // glibc 2.34+ defines dlsym in libc.so.6 at GLIBC_2.34 and keeps the old version nodes.
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
  for (const char* version : kVersions) {
    if (void* found = ::dlvsym(RTLD_NEXT, "dlsym", version)) {
      __atomic_store_n(&fleetscope_lanes_next_dlsym, found, __ATOMIC_RELEASE);
      return found;
    }
  }
  return nullptr;
}

extern "C" void* fleetscope_lanes_dlsym_dispatch(void* handle, const char* symbol) {
  DlsymFunction lookup = libc_dlsym();
  if (!lookup) return nullptr;
  void* real = lookup(handle, symbol);
  if (!real || !symbol || handle == RTLD_DEFAULT) return real;
  if (std::strcmp(symbol, "InitializeInjectionNvtx2") == 0) return chain_nvtx_injection(real);
  bool cuda = symbol[0] == 'c' && symbol[1] == 'u';
  bool nvml = !cuda && starts_with(symbol, "nvml");
  if (!cuda && !nvml) return real;
  // Remember the handle the job uses for the library, for the helpers we look up ourselves.
  void* expected = nullptr;
  (cuda ? g_cuda_handle : g_nvml_handle).compare_exchange_strong(expected, handle);
  HookEntry* entry = find_hook(symbol);
  if (!entry) return real;
  note_real(*entry, real);
  return entry->wrapper;
}

// Resolve libc's dlsym before the job's code runs, so the assembly entry's fast path is taken.
__attribute__((constructor)) static void resolve_dlsym_early() {
  fleetscope_lanes_resolve_next_dlsym();
}
