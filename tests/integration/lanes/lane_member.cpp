// A stand-in "job" for the lanes tests: it reaches the (stand-in) CUDA driver the way real jobs do
// and runs a script of commands given on its command line, printing one result line per command.
//
//   lane_member PATH COMMAND...      PATH: dlsym | proc (| linked, in lane_member_linked)
//
// dlsym:  dlopen("libcuda.so.1") + dlsym of each entry point (a framework's own loader);
// proc:   dlsym("cuGetProcAddress_v2") only, every other entry point through it (the CUDA runtime);
// linked: the program links libcuda.so.1 and calls the entry points directly.
//
// Commands: alloc N | managed N | pitch W H | free | async N | freeasync | trim KEEP | vmm N |
// vmmrelease | meminfo | nvml | launch US | sync | step LABEL | release | enforcing | ready | wait
// | sleep MS | steps COUNT US LABEL | nvtx NAME (nvtxRangePushA/Pop) | nvtxex NAME
// (nvtxDomainRangePushEx) | toolpushes (pushes counted by the stand-in NVTX tool).

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/step.h"

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUmemoryPool = void*;

struct AllocationProp {
  int type;
  int handle_types;
  int location_type;
  int location_id;
  void* win32_metadata;
  unsigned char flags[8];
};

struct Driver {
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_alloc_managed)(CUdeviceptr*, size_t, unsigned) = nullptr;
  CUresult (*mem_alloc_pitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*mem_get_info)(size_t*, size_t*) = nullptr;
  CUresult (*mem_alloc_async)(CUdeviceptr*, size_t, void*) = nullptr;
  CUresult (*mem_free_async)(CUdeviceptr, void*) = nullptr;
  CUresult (*device_get_mem_pool)(CUmemoryPool*, int) = nullptr;
  CUresult (*mem_pool_trim_to)(CUmemoryPool, size_t) = nullptr;
  CUresult (*mem_create)(unsigned long long*, size_t, const AllocationProp*,
                         unsigned long long) = nullptr;
  CUresult (*mem_release)(unsigned long long) = nullptr;
  CUresult (*launch_kernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, void*, void**, void**) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
};

template <typename F>
void set(F* slot, void* address) {
  *slot = reinterpret_cast<F>(address);
}

#ifdef FLEETSCOPE_MEMBER_LINKED
extern "C" {
CUresult cuMemAlloc_v2(CUdeviceptr*, size_t);
CUresult cuMemAllocManaged(CUdeviceptr*, size_t, unsigned);
CUresult cuMemAllocPitch_v2(CUdeviceptr*, size_t*, size_t, size_t, unsigned);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemGetInfo_v2(size_t*, size_t*);
CUresult cuMemAllocAsync(CUdeviceptr*, size_t, void*);
CUresult cuMemFreeAsync(CUdeviceptr, void*);
CUresult cuDeviceGetMemPool(CUmemoryPool*, int);
CUresult cuMemPoolTrimTo(CUmemoryPool, size_t);
CUresult cuMemCreate(unsigned long long*, size_t, const AllocationProp*, unsigned long long);
CUresult cuMemRelease(unsigned long long);
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void*, void**, void**);
CUresult cuCtxSynchronize();
}
bool load_linked(Driver& d) {
  d.mem_alloc = &cuMemAlloc_v2;
  d.mem_alloc_managed = &cuMemAllocManaged;
  d.mem_alloc_pitch = &cuMemAllocPitch_v2;
  d.mem_free = &cuMemFree_v2;
  d.mem_get_info = &cuMemGetInfo_v2;
  d.mem_alloc_async = &cuMemAllocAsync;
  d.mem_free_async = &cuMemFreeAsync;
  d.device_get_mem_pool = &cuDeviceGetMemPool;
  d.mem_pool_trim_to = &cuMemPoolTrimTo;
  d.mem_create = &cuMemCreate;
  d.mem_release = &cuMemRelease;
  d.launch_kernel = &cuLaunchKernel;
  d.ctx_synchronize = &cuCtxSynchronize;
  return true;
}
#endif

bool load_dlsym(Driver& d) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) return false;
  set(&d.mem_alloc, dlsym(library, "cuMemAlloc_v2"));
  set(&d.mem_alloc_managed, dlsym(library, "cuMemAllocManaged"));
  set(&d.mem_alloc_pitch, dlsym(library, "cuMemAllocPitch_v2"));
  set(&d.mem_free, dlsym(library, "cuMemFree_v2"));
  set(&d.mem_get_info, dlsym(library, "cuMemGetInfo_v2"));
  set(&d.mem_alloc_async, dlsym(library, "cuMemAllocAsync"));
  set(&d.mem_free_async, dlsym(library, "cuMemFreeAsync"));
  set(&d.device_get_mem_pool, dlsym(library, "cuDeviceGetMemPool"));
  set(&d.mem_pool_trim_to, dlsym(library, "cuMemPoolTrimTo"));
  set(&d.mem_create, dlsym(library, "cuMemCreate"));
  set(&d.mem_release, dlsym(library, "cuMemRelease"));
  set(&d.launch_kernel, dlsym(library, "cuLaunchKernel"));
  set(&d.ctx_synchronize, dlsym(library, "cuCtxSynchronize"));
  return d.mem_alloc != nullptr;
}

bool load_proc(Driver& d) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) return false;
  using GetProc = CUresult (*)(const char*, void**, int, unsigned long long, int*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(library, "cuGetProcAddress_v2"));
  if (!get_proc) return false;
  // As the CUDA 12 runtime does: ask for cuGetProcAddress itself, then use what came back.
  void* self = nullptr;
  int status = 0;
  if (get_proc("cuGetProcAddress", &self, 12000, 0, &status) != 0 || !self) return false;
  get_proc = reinterpret_cast<GetProc>(self);
  auto get = [&](const char* name) {
    void* address = nullptr;
    get_proc(name, &address, 12000, 0, &status);
    return address;
  };
  set(&d.mem_alloc, get("cuMemAlloc"));
  set(&d.mem_alloc_managed, get("cuMemAllocManaged"));
  set(&d.mem_alloc_pitch, get("cuMemAllocPitch"));
  set(&d.mem_free, get("cuMemFree"));
  set(&d.mem_get_info, get("cuMemGetInfo"));
  set(&d.mem_alloc_async, get("cuMemAllocAsync"));
  set(&d.mem_free_async, get("cuMemFreeAsync"));
  set(&d.device_get_mem_pool, get("cuDeviceGetMemPool"));
  set(&d.mem_pool_trim_to, get("cuMemPoolTrimTo"));
  set(&d.mem_create, get("cuMemCreate"));
  set(&d.mem_release, get("cuMemRelease"));
  set(&d.launch_kernel, get("cuLaunchKernel"));
  set(&d.ctx_synchronize, get("cuCtxSynchronize"));
  return d.mem_alloc != nullptr;
}

// The NVTX v3 loader as the header-only NVTX in a job runs it (nvtxDetail/nvtxInit.h): on first
// use, dlopen NVTX_INJECTION64_PATH, dlsym InitializeInjectionNvtx2, call it with an export-table
// getter that hands out this module's function-pointer slots; slots the tool left at their init
// stubs become no-ops afterwards.
namespace nvtx {
using FunctionPointer = void (*)();
using FunctionTable = FunctionPointer**;
struct Callbacks {
  size_t struct_size;
  int (*get_module_function_table)(int, FunctionTable*, unsigned*);
};
void init_stub() {}
FunctionPointer core_slots[16];
FunctionPointer core2_slots[16];
FunctionPointer* core_table[16];
FunctionPointer* core2_table[16];
int get_module_function_table(int module, FunctionTable* table, unsigned* size) {
  if (module != 1 && module != 5) return 0;
  *table = module == 1 ? core_table : core2_table;
  *size = 16;
  return 1;
}
const Callbacks kCallbacks{sizeof(Callbacks), &get_module_function_table};
const void* get_export_table(uint32_t id) {
  return id == 1 ? &kCallbacks : nullptr;
}
bool initialised = false;
void initialise() {
  if (initialised) return;
  initialised = true;
  for (int i = 0; i < 16; ++i) {
    core_slots[i] = core2_slots[i] = &init_stub;
    core_table[i] = &core_slots[i];
    core2_table[i] = &core2_slots[i];
  }
  bool ok = false;
  if (const char* path = std::getenv("NVTX_INJECTION64_PATH")) {
    void* library = dlopen(path, RTLD_LAZY);
    auto init = reinterpret_cast<int (*)(const void* (*)(uint32_t))>(
        library ? dlsym(library, "InitializeInjectionNvtx2") : nullptr);
    ok = init && init(&get_export_table);
  }
  for (int i = 0; i < 16; ++i) {
    if (!ok || core_slots[i] == &init_stub) core_slots[i] = nullptr;
    if (!ok || core2_slots[i] == &init_stub) core2_slots[i] = nullptr;
  }
}
struct EventAttributes {
  uint16_t version, size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type, reserved0;
  uint64_t payload;
  int32_t message_type;
  const char* message;
};
void push_a(const char* name) {
  initialise();
  if (core_slots[9]) reinterpret_cast<int (*)(const char*)>(core_slots[9])(name);  // nvtxRangePushA
  if (core_slots[11]) reinterpret_cast<int (*)()>(core_slots[11])();               // nvtxRangePop
}
void domain_push_ex(const char* name) {
  initialise();
  EventAttributes attributes{3, sizeof(EventAttributes), 0, 0, 0, 0, 0, 0, 1, name};
  if (core2_slots[4])
    reinterpret_cast<int (*)(void*, const void*)>(core2_slots[4])(nullptr, &attributes);
}
}  // namespace nvtx

void print(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

unsigned long long number(char** argv, int& i, int argc) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "lane_member: '%s' needs a number\n", argv[i]);
    std::exit(2);
  }
  return std::strtoull(argv[++i], nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lane_member dlsym|proc|linked COMMAND...\n");
    return 2;
  }
  Driver d;
  std::string path = argv[1];
  bool loaded = false;
  if (path == "dlsym") loaded = load_dlsym(d);
  if (path == "proc") loaded = load_proc(d);
#ifdef FLEETSCOPE_MEMBER_LINKED
  if (path == "linked") loaded = load_linked(d);
#endif
  if (!loaded) {
    std::fprintf(stderr, "lane_member: cannot load the driver through '%s': %s\n", path.c_str(),
                 dlerror());
    return 2;
  }
  std::vector<CUdeviceptr> device_pointers, async_pointers;
  std::vector<unsigned long long> handles;
  for (int i = 2; i < argc; ++i) {
    std::string command = argv[i];
    if (command == "alloc" || command == "managed") {
      unsigned long long bytes = number(argv, i, argc);
      CUdeviceptr pointer = 0;
      CUresult rc = command == "alloc" ? d.mem_alloc(&pointer, bytes)
                                       : d.mem_alloc_managed(&pointer, bytes, 1);
      if (rc == 0) device_pointers.push_back(pointer);
      print(command + " " + std::to_string(bytes) + " " + std::to_string(rc));
    } else if (command == "pitch") {
      unsigned long long width = number(argv, i, argc), height = number(argv, i, argc);
      CUdeviceptr pointer = 0;
      size_t pitch = 0;
      CUresult rc = d.mem_alloc_pitch(&pointer, &pitch, width, height, 4);
      if (rc == 0) device_pointers.push_back(pointer);
      print("pitch " + std::to_string(rc) + " " + std::to_string(pitch));
    } else if (command == "free") {
      CUresult rc = device_pointers.empty() ? -1 : d.mem_free(device_pointers.back());
      if (!device_pointers.empty()) device_pointers.pop_back();
      print("free " + std::to_string(rc));
    } else if (command == "async") {
      unsigned long long bytes = number(argv, i, argc);
      CUdeviceptr pointer = 0;
      CUresult rc = d.mem_alloc_async(&pointer, bytes, nullptr);
      if (rc == 0) async_pointers.push_back(pointer);
      print("async " + std::to_string(bytes) + " " + std::to_string(rc));
    } else if (command == "freeasync") {
      CUresult rc = async_pointers.empty() ? -1 : d.mem_free_async(async_pointers.back(), nullptr);
      if (!async_pointers.empty()) async_pointers.pop_back();
      print("freeasync " + std::to_string(rc));
    } else if (command == "trim") {
      unsigned long long keep = number(argv, i, argc);
      CUmemoryPool pool = nullptr;
      CUresult rc = d.device_get_mem_pool(&pool, 0);
      if (rc == 0) rc = d.mem_pool_trim_to(pool, keep);
      print("trim " + std::to_string(rc));
    } else if (command == "vmm") {
      unsigned long long bytes = number(argv, i, argc);
      AllocationProp prop{};
      prop.type = 1;           // pinned
      prop.location_type = 1;  // device
      unsigned long long handle = 0;
      CUresult rc = d.mem_create(&handle, bytes, &prop, 0);
      if (rc == 0) handles.push_back(handle);
      print("vmm " + std::to_string(bytes) + " " + std::to_string(rc));
    } else if (command == "vmmrelease") {
      CUresult rc = handles.empty() ? -1 : d.mem_release(handles.back());
      if (!handles.empty()) handles.pop_back();
      print("vmmrelease " + std::to_string(rc));
    } else if (command == "meminfo") {
      size_t free_bytes = 0, total = 0;
      CUresult rc = d.mem_get_info(&free_bytes, &total);
      print("meminfo " + std::to_string(rc) + " " + std::to_string(free_bytes) + " " +
            std::to_string(total));
    } else if (command == "nvml") {
      void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      struct Memory {
        unsigned long long total, free, used;
      } memory{};
      auto init = reinterpret_cast<int (*)()>(nvml ? dlsym(nvml, "nvmlInit_v2") : nullptr);
      auto handle_by_index = reinterpret_cast<int (*)(unsigned, void**)>(
          nvml ? dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2") : nullptr);
      auto memory_info = reinterpret_cast<int (*)(void*, Memory*)>(
          nvml ? dlsym(nvml, "nvmlDeviceGetMemoryInfo") : nullptr);
      void* device = nullptr;
      int rc = (!init || !handle_by_index || !memory_info) ? -1 : init();
      if (rc == 0) rc = handle_by_index(0, &device);
      if (rc == 0) rc = memory_info(device, &memory);
      print("nvml " + std::to_string(rc) + " " + std::to_string(memory.free) + " " +
            std::to_string(memory.total) + " " + std::to_string(memory.used));
    } else if (command == "launch") {
      unsigned long long us = number(argv, i, argc);
      CUresult rc = d.launch_kernel(reinterpret_cast<void*>(static_cast<uintptr_t>(us)), 1, 1, 1, 1,
                                    1, 1, 0, nullptr, nullptr, nullptr);
      print("launch " + std::to_string(rc));
    } else if (command == "sync") {
      print("sync " + std::to_string(d.ctx_synchronize()));
    } else if (command == "step") {
      std::string label = i + 1 < argc ? argv[++i] : "member";
      fleetscope_step();
      print("turn " + label);
    } else if (command == "steps") {
      unsigned long long count = number(argv, i, argc), us = number(argv, i, argc);
      std::string label = i + 1 < argc ? argv[++i] : "member";
      for (unsigned long long step = 0; step < count; ++step) {
        fleetscope_step();
        print("turn " + label + " " + std::to_string(step));
        d.launch_kernel(reinterpret_cast<void*>(static_cast<uintptr_t>(us)), 1, 1, 1, 1, 1, 1, 0,
                        nullptr, nullptr, nullptr);
        d.ctx_synchronize();
      }
    } else if (command == "nvtx" || command == "nvtxex") {
      std::string name = i + 1 < argc ? argv[++i] : "";
      (command == "nvtx" ? nvtx::push_a : nvtx::domain_push_ex)(name.c_str());
      print(command + " " + name);
    } else if (command == "toolpushes") {
      void* tool = dlopen(std::getenv("NVTX_INJECTION64_PATH"), RTLD_LAZY | RTLD_NOLOAD);
      auto pushes =
          reinterpret_cast<int (*)()>(tool ? dlsym(tool, "stand_in_nvtx_tool_pushes") : nullptr);
      print("toolpushes " + (pushes ? std::to_string(pushes()) : std::string("absent")));
    } else if (command == "release") {
      fleetscope_step_release();
      print("released");
    } else if (command == "enforcing") {
      auto enforcing =
          reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "fleetscope_lanes_enforcing"));
      print(std::string("enforcing ") + (enforcing ? std::to_string(enforcing()) : "absent"));
    } else if (command == "ready") {
      print("ready");
    } else if (command == "wait") {
      std::string line;
      std::getline(std::cin, line);
      print("continued");
    } else if (command == "sleep") {
      std::this_thread::sleep_for(std::chrono::milliseconds(number(argv, i, argc)));
    } else {
      std::fprintf(stderr, "lane_member: unknown command '%s'\n", command.c_str());
      return 2;
    }
  }
  return 0;
}
