// A stand-in libcuda.so.1 for tests on machines without a GPU: the driver entry points that the
// lanes library wraps or calls, with a device-memory byte counter instead of a device, async
// memory pools that keep freed memory until trimmed (as the real stream-ordered allocator does),
// the virtual-memory API, and a worker thread that "runs" each launch for the number of
// microseconds given as its CUfunction handle. Tests load it through the same paths a job uses
// (linked, dlopen + dlsym, cuGetProcAddress) and LD_PRELOAD the real interposition library on top.
//
// Environment: FLEETSCOPE_STANDIN_DEVICE_BYTES (device size, default 16 GiB) and
// FLEETSCOPE_STANDIN_DEVICE_FILE (a file whose first 8 bytes are the device's used-byte counter,
// shared by every process that names it: one simulated GPU for several jobs).

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUdevice = int;
using CUstream = void*;
using CUmemoryPool = void*;
using CUfunction = void*;
using CUmemGenericAllocationHandle = unsigned long long;
constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotFound = 500;

struct Device {
  std::atomic<uint64_t>* used = nullptr;
  std::atomic<uint64_t> local_used{0};
  uint64_t total = 16ull << 30;

  Device() {
    if (const char* bytes = std::getenv("FLEETSCOPE_STANDIN_DEVICE_BYTES"))
      total = std::strtoull(bytes, nullptr, 10);
    used = &local_used;
    if (const char* file = std::getenv("FLEETSCOPE_STANDIN_DEVICE_FILE")) {
      int fd = ::open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0 && ::ftruncate(fd, 4096) == 0) {
        void* memory = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (memory != MAP_FAILED) used = static_cast<std::atomic<uint64_t>*>(memory);
      }
      if (fd >= 0) ::close(fd);
    }
  }
  bool take(uint64_t bytes) {
    uint64_t current = used->load();
    do {
      if (current > total || bytes > total - current) return false;
    } while (!used->compare_exchange_weak(current, current + bytes));
    return true;
  }
  void give(uint64_t bytes) { used->fetch_sub(bytes); }
};

Device& device() {
  static Device* instance = new Device();
  return *instance;
}

struct Pool {
  uint64_t reserved = 0;
  uint64_t used = 0;
};

struct State {
  std::mutex mutex;
  std::unordered_map<CUdeviceptr, uint64_t> sizes;
  std::unordered_map<CUdeviceptr, Pool*> pool_of;
  std::unordered_map<CUmemGenericAllocationHandle, uint64_t> handles;
  Pool default_pool;
  uint64_t next_address = 0x7f0000000000ull;
  uint64_t next_handle = 1;

  // The launch queue.
  std::condition_variable queue_changed;
  std::deque<uint64_t> launches_us;
  bool running = false;
  std::thread worker;

  CUdeviceptr address_for(uint64_t bytes) {
    CUdeviceptr address = next_address;
    next_address += (bytes + 511) / 512 * 512 + 512;
    return address;
  }
};

State& state() {
  static State* instance = new State();
  return *instance;
}

CUresult allocate(CUdeviceptr* dptr, uint64_t bytes) {
  if (!dptr || bytes == 0) return kInvalidValue;
  if (!device().take(bytes)) return kOutOfMemory;
  State& s = state();
  std::lock_guard lock(s.mutex);
  *dptr = s.address_for(bytes);
  s.sizes[*dptr] = bytes;
  return kSuccess;
}

CUresult pool_allocate(CUdeviceptr* dptr, uint64_t bytes, Pool* pool) {
  if (!dptr || bytes == 0 || !pool) return kInvalidValue;
  State& s = state();
  std::lock_guard lock(s.mutex);
  uint64_t idle = pool->reserved - pool->used;
  if (idle < bytes) {
    if (!device().take(bytes - idle)) return kOutOfMemory;
    pool->reserved += bytes - idle;
  }
  pool->used += bytes;
  *dptr = s.address_for(bytes);
  s.sizes[*dptr] = bytes;
  s.pool_of[*dptr] = pool;
  return kSuccess;
}

// Frees `dptr`: plain memory goes back to the device, pool memory back to its pool (idle).
CUresult release(CUdeviceptr dptr) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto size = s.sizes.find(dptr);
  if (size == s.sizes.end()) return kInvalidValue;
  auto pool = s.pool_of.find(dptr);
  if (pool != s.pool_of.end()) {
    pool->second->used -= size->second;
    s.pool_of.erase(pool);
  } else {
    device().give(size->second);
  }
  s.sizes.erase(size);
  return kSuccess;
}

void start_worker_locked(State& s) {
  if (s.running) return;
  s.running = true;
  s.worker = std::thread([&s] {
    std::unique_lock lock(s.mutex);
    for (;;) {
      s.queue_changed.wait(lock, [&] { return !s.launches_us.empty(); });
      uint64_t duration = s.launches_us.front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(duration));
      lock.lock();
      s.launches_us.pop_front();
      s.queue_changed.notify_all();
    }
  });
  s.worker.detach();
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int) {
  return kSuccess;
}
CUresult cuDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = 13000;
  return kSuccess;
}
CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (!dev || ordinal != 0) return kInvalidValue;
  *dev = 0;
  return kSuccess;
}
CUresult cuDeviceGetCount(int* count) {
  if (!count) return kInvalidValue;
  *count = 1;
  return kSuccess;
}
CUresult cuCtxGetDevice(CUdevice* dev) {
  if (!dev) return kInvalidValue;
  *dev = 0;
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  return allocate(dptr, bytes);
}
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int) {
  return allocate(dptr, bytes);
}
CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                            unsigned int) {
  if (!pitch) return kInvalidValue;
  *pitch = (width + 511) / 512 * 512;  // rows padded to 512 bytes
  return allocate(dptr, static_cast<uint64_t>(*pitch) * height);
}
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return release(dptr);
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return kInvalidValue;
  uint64_t used = device().used->load();
  *total_bytes = device().total;
  *free_bytes = device().total > used ? device().total - used : 0;
  return kSuccess;
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice) {
  if (!pool) return kInvalidValue;
  *pool = &state().default_pool;
  return kSuccess;
}
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  return cuDeviceGetMemPool(pool, dev);
}
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream) {
  return pool_allocate(dptr, bytes, &state().default_pool);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return cuMemAllocAsync(dptr, bytes, stream);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream) {
  return pool_allocate(dptr, bytes, static_cast<Pool*>(pool));
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                      CUstream stream) {
  return cuMemAllocFromPoolAsync(dptr, bytes, pool, stream);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream) {
  return release(dptr);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return cuMemFreeAsync(dptr, stream);
}
CUresult cuMemPoolTrimTo(CUmemoryPool handle, size_t keep) {
  if (!handle) return kInvalidValue;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto* pool = static_cast<Pool*>(handle);
  uint64_t idle = pool->reserved - pool->used;
  uint64_t give_back = idle > keep ? idle - keep : 0;
  pool->reserved -= give_back;
  device().give(give_back);
  return kSuccess;
}
CUresult cuMemPoolGetAttribute(CUmemoryPool handle, int attribute, void* value) {
  if (!handle || !value) return kInvalidValue;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto* pool = static_cast<Pool*>(handle);
  if (attribute == 5) {  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
    *static_cast<uint64_t*>(value) = pool->reserved;
  } else if (attribute == 7) {  // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
    *static_cast<uint64_t*>(value) = pool->used;
  } else {
    return kInvalidValue;
  }
  return kSuccess;
}

struct AllocationProp {
  int type;
  int handle_types;
  int location_type;
  int location_id;
};
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const AllocationProp* prop,
                     unsigned long long) {
  if (!handle || !prop || bytes == 0) return kInvalidValue;
  bool on_device = prop->location_type == 1;
  if (on_device && !device().take(bytes)) return kOutOfMemory;
  State& s = state();
  std::lock_guard lock(s.mutex);
  *handle = s.next_handle++;
  s.handles[*handle] = on_device ? bytes : 0;
  return kSuccess;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto found = s.handles.find(handle);
  if (found == s.handles.end()) return kInvalidValue;
  device().give(found->second);
  s.handles.erase(found);
  return kSuccess;
}

CUresult cuLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void**, void**) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  start_worker_locked(s);
  s.launches_us.push_back(reinterpret_cast<uintptr_t>(f));
  s.queue_changed.notify_all();
  return kSuccess;
}
CUresult cuCtxSynchronize() {
  State& s = state();
  std::unique_lock lock(s.mutex);
  s.queue_changed.wait(lock, [&] { return s.launches_us.empty(); });
  return kSuccess;
}
CUresult cuStreamSynchronize(CUstream) {
  return cuCtxSynchronize();
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                             int* status);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

// The stand-in's own table, by base name and variant, as the driver's cuGetProcAddress answers:
// the _v2 spellings from CUDA 3.2 on, cuGetProcAddress_v2 from 12.0 on, the _ptsz variants when
// the per-thread default stream is asked for. No dlsym here: the answer must be the stand-in's own
// functions even when the interposition library is loaded.
struct ProcEntry {
  const char* base;
  int min_version;
  bool per_thread;
  void* function;
};
#define FS_ENTRY(base, version, per_thread, function) \
  { base, version, per_thread, reinterpret_cast<void*>(&function) }
static const ProcEntry kProcTable[] = {
    FS_ENTRY("cuGetProcAddress", 12000, false, cuGetProcAddress_v2),
    FS_ENTRY("cuGetProcAddress", 0, false, cuGetProcAddress),
    FS_ENTRY("cuInit", 0, false, cuInit),
    FS_ENTRY("cuDriverGetVersion", 0, false, cuDriverGetVersion),
    FS_ENTRY("cuDeviceGet", 0, false, cuDeviceGet),
    FS_ENTRY("cuDeviceGetCount", 0, false, cuDeviceGetCount),
    FS_ENTRY("cuCtxGetDevice", 0, false, cuCtxGetDevice),
    FS_ENTRY("cuCtxSynchronize", 0, false, cuCtxSynchronize),
    FS_ENTRY("cuStreamSynchronize", 0, false, cuStreamSynchronize),
    FS_ENTRY("cuLaunchKernel", 0, false, cuLaunchKernel),
    FS_ENTRY("cuMemAlloc", 3020, false, cuMemAlloc_v2),
    FS_ENTRY("cuMemAllocManaged", 0, false, cuMemAllocManaged),
    FS_ENTRY("cuMemAllocPitch", 3020, false, cuMemAllocPitch_v2),
    FS_ENTRY("cuMemFree", 3020, false, cuMemFree_v2),
    FS_ENTRY("cuMemGetInfo", 3020, false, cuMemGetInfo_v2),
    FS_ENTRY("cuDeviceGetMemPool", 0, false, cuDeviceGetMemPool),
    FS_ENTRY("cuDeviceGetDefaultMemPool", 0, false, cuDeviceGetDefaultMemPool),
    FS_ENTRY("cuMemAllocAsync", 0, true, cuMemAllocAsync_ptsz),
    FS_ENTRY("cuMemAllocAsync", 0, false, cuMemAllocAsync),
    FS_ENTRY("cuMemAllocFromPoolAsync", 0, true, cuMemAllocFromPoolAsync_ptsz),
    FS_ENTRY("cuMemAllocFromPoolAsync", 0, false, cuMemAllocFromPoolAsync),
    FS_ENTRY("cuMemFreeAsync", 0, true, cuMemFreeAsync_ptsz),
    FS_ENTRY("cuMemFreeAsync", 0, false, cuMemFreeAsync),
    FS_ENTRY("cuMemPoolTrimTo", 0, false, cuMemPoolTrimTo),
    FS_ENTRY("cuMemPoolGetAttribute", 0, false, cuMemPoolGetAttribute),
    FS_ENTRY("cuMemCreate", 0, false, cuMemCreate),
    FS_ENTRY("cuMemRelease", 0, false, cuMemRelease),
};
#undef FS_ENTRY

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags,
                             int* status) {
  if (!symbol || !pfn) return kInvalidValue;
  bool per_thread = (flags & 2u) != 0;
  for (const ProcEntry& entry : kProcTable) {
    if (std::strcmp(entry.base, symbol) != 0 || version < entry.min_version) continue;
    if (entry.per_thread && !per_thread) continue;
    *pfn = entry.function;
    if (status) *status = 0;  // CU_GET_PROC_ADDRESS_SUCCESS
    return kSuccess;
  }
  *pfn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return kNotFound;
}

// Test and benchmark hooks (not driver API): the stand-in's own function by exported name,
// bypassing any interposition, and the device's used-byte counter.
void* fleetscope_standin_function(const char* exported_name) {
  struct Named {
    const char* name;
    void* function;
  };
  static const Named kNamed[] = {
      {"cuMemAlloc_v2", reinterpret_cast<void*>(&cuMemAlloc_v2)},
      {"cuMemFree_v2", reinterpret_cast<void*>(&cuMemFree_v2)},
      {"cuMemGetInfo_v2", reinterpret_cast<void*>(&cuMemGetInfo_v2)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel)},
      {"cuCtxSynchronize", reinterpret_cast<void*>(&cuCtxSynchronize)},
  };
  for (const Named& named : kNamed) {
    if (std::strcmp(named.name, exported_name) == 0) return named.function;
  }
  return nullptr;
}
unsigned long long fleetscope_standin_device_used() {
  return device().used->load();
}

}  // extern "C"
