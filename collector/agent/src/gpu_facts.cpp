#include "gpu_facts.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

namespace fleetscope::agent {

std::vector<store::GpuInfo> read_gpu_facts(std::string& why) {
  std::vector<store::GpuInfo> gpus;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!driver) {
    why = "the CUDA driver is not loaded";
    return gpus;
  }
  auto get_count = reinterpret_cast<decltype(&cuDeviceGetCount)>(dlsym(driver, "cuDeviceGetCount"));
  auto get = reinterpret_cast<decltype(&cuDeviceGet)>(dlsym(driver, "cuDeviceGet"));
  auto get_name = reinterpret_cast<decltype(&cuDeviceGetName)>(dlsym(driver, "cuDeviceGetName"));
  auto get_uuid =
      reinterpret_cast<decltype(&cuDeviceGetUuid_v2)>(dlsym(driver, "cuDeviceGetUuid_v2"));
  auto total_mem =
      reinterpret_cast<decltype(&cuDeviceTotalMem_v2)>(dlsym(driver, "cuDeviceTotalMem_v2"));
  auto attribute =
      reinterpret_cast<decltype(&cuDeviceGetAttribute)>(dlsym(driver, "cuDeviceGetAttribute"));
  auto bus_id =
      reinterpret_cast<decltype(&cuDeviceGetPCIBusId)>(dlsym(driver, "cuDeviceGetPCIBusId"));
  int count = 0;
  if (!get_count || !get || !attribute || get_count(&count) != CUDA_SUCCESS) {
    why = "cuDeviceGetCount failed";
    dlclose(driver);
    return gpus;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice device = 0;
    if (get(&device, ordinal) != CUDA_SUCCESS) continue;
    auto attr = [&](CUdevice_attribute which) -> std::optional<int> {
      int value = 0;
      if (attribute(&value, which, device) != CUDA_SUCCESS) return std::nullopt;
      return value;
    };
    store::GpuInfo gpu;
    gpu.id = ordinal;
    char name[256] = {};
    if (get_name && get_name(name, sizeof name, device) == CUDA_SUCCESS) gpu.name = name;
    CUuuid uuid{};
    if (get_uuid && get_uuid(&uuid, device) == CUDA_SUCCESS) {
      // nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
      char text[64];
      const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
      std::snprintf(text, sizeof text,
                    "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                    b[13], b[14], b[15]);
      gpu.uuid = text;
    }
    char bus[32] = {};
    if (bus_id && bus_id(bus, sizeof bus, device) == CUDA_SUCCESS) gpu.busLocation = bus;
    size_t bytes = 0;
    if (total_mem && total_mem(&bytes, device) == CUDA_SUCCESS)
      gpu.totalMemory = static_cast<int64_t>(bytes);
    gpu.smCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    gpu.computeMajor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    gpu.computeMinor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    if (auto khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)) gpu.clockRate = int64_t{*khz} * 1000;
    auto mem_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    auto bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    if (mem_khz && bus_bits)  // double data rate: two transfers per memory clock
      gpu.memoryBandwidth = int64_t{*mem_khz} * 1000 * 2 * (*bus_bits / 8);
    gpu.maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    gpu.threadsPerWarp = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    if (auto threads = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR))
      gpu.maxWarpsPerSm =
          *threads / (gpu.threadsPerWarp.value_or(32) ? gpu.threadsPerWarp.value_or(32) : 32);
    gpu.maxBlocksPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    gpu.maxRegistersPerSm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    if (auto shmem = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR))
      gpu.maxShmemPerSm = *shmem;
    gpu.vendor = "nvidia";
    gpus.push_back(std::move(gpu));
  }
  dlclose(driver);  // drops only our reference; the process keeps its own
  return gpus;
}

}  // namespace fleetscope::agent
