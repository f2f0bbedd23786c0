#include "fleetscope/daemon/nvml_sampler.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>

namespace fleetscope::daemon {
namespace {

// nvml.h declarations (ABI), API version 12.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr int NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, what the _v3 query fills
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // µs
  unsigned int smUtil, memUtil, encUtil, decUtil;
};

}  // namespace

struct NvmlSampler::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned int*);
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*);
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
  nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                      unsigned long long);
};

NvmlSampler::NvmlSampler(const std::string& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    note_ = "device sampling is off: cannot load " + library + " (" +
            (why ? why : "unknown error") + "); is the NVIDIA driver installed?";
    return;
  }
  api_ = std::make_unique<Api>();
  std::string missing;
  auto bind = [&](auto& fn, const char* symbol, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, symbol));
    if (!fn && required) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  bind(api_->init, "nvmlInit_v2");
  bind(api_->shutdown, "nvmlShutdown");
  bind(api_->error_string, "nvmlErrorString");
  bind(api_->count, "nvmlDeviceGetCount_v2");
  bind(api_->handle, "nvmlDeviceGetHandleByIndex_v2");
  bind(api_->name, "nvmlDeviceGetName");
  bind(api_->uuid, "nvmlDeviceGetUUID");
  bind(api_->utilization, "nvmlDeviceGetUtilizationRates");
  bind(api_->memory, "nvmlDeviceGetMemoryInfo");
  bind(api_->power, "nvmlDeviceGetPowerUsage", false);
  bind(api_->clock, "nvmlDeviceGetClockInfo", false);
  bind(api_->processes, "nvmlDeviceGetComputeRunningProcesses_v3", false);
  bind(api_->process_utilization, "nvmlDeviceGetProcessUtilization", false);
  if (!missing.empty()) {
    note_ = "device sampling is off: " + library + " lacks " + missing;
    return;
  }
  if (nvmlReturn_t rc = api_->init(); rc != NVML_SUCCESS) {
    note_ = "device sampling is off: nvmlInit failed: " + std::string(api_->error_string(rc));
    return;
  }
  unsigned int count = 0;
  if (nvmlReturn_t rc = api_->count(&count); rc != NVML_SUCCESS) {
    note_ =
        "device sampling is off: nvmlDeviceGetCount failed: " + std::string(api_->error_string(rc));
    api_->shutdown();
    return;
  }
  device_count_ = static_cast<int>(count);
  last_process_sample_us_.assign(count, 0);
  available_ = true;
}

NvmlSampler::~NvmlSampler() {
  if (available_) api_->shutdown();
  if (handle_) dlclose(handle_);
}

std::vector<DeviceReading> NvmlSampler::sample() {
  std::vector<DeviceReading> out;
  if (!available_) return out;
  for (int i = 0; i < device_count_; ++i) {
    nvmlDevice_t device = nullptr;
    if (api_->handle(static_cast<unsigned int>(i), &device) != NVML_SUCCESS) continue;
    DeviceReading r;
    r.index = i;
    char text[96] = {};
    if (api_->name(device, text, sizeof text) == NVML_SUCCESS) r.name = text;
    if (api_->uuid(device, text, sizeof text) == NVML_SUCCESS) r.uuid = text;
    nvmlUtilization_t utilization{};
    if (api_->utilization(device, &utilization) == NVML_SUCCESS) {
      r.gpu_utilization_pct = utilization.gpu;
      r.memory_utilization_pct = utilization.memory;
    }
    nvmlMemory_t memory{};
    if (api_->memory(device, &memory) == NVML_SUCCESS) {
      r.memory_used_bytes = static_cast<int64_t>(memory.used);
      r.memory_total_bytes = static_cast<int64_t>(memory.total);
    }
    unsigned int value = 0;
    if (api_->power && api_->power(device, &value) == NVML_SUCCESS) r.power_watts = value / 1000.0;
    if (api_->clock && api_->clock(device, NVML_CLOCK_SM, &value) == NVML_SUCCESS)
      r.sm_clock_mhz = value;
    if (api_->clock && api_->clock(device, NVML_CLOCK_GRAPHICS, &value) == NVML_SUCCESS)
      r.graphics_clock_mhz = value;
    if (api_->clock && api_->clock(device, NVML_CLOCK_MEM, &value) == NVML_SUCCESS)
      r.memory_clock_mhz = value;

    std::map<int, ProcessReading> by_pid;
    if (api_->processes) {
      std::vector<nvmlProcessInfo_t> infos(64);
      unsigned int n = static_cast<unsigned int>(infos.size());
      nvmlReturn_t rc = api_->processes(device, &n, infos.data());
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
        infos.resize(n + 16);
        n = static_cast<unsigned int>(infos.size());
        rc = api_->processes(device, &n, infos.data());
      }
      if (rc == NVML_SUCCESS)
        for (unsigned int k = 0; k < n; ++k) {
          auto& p = by_pid[static_cast<int>(infos[k].pid)];
          p.pid = static_cast<int>(infos[k].pid);
          p.memory_used_bytes = static_cast<int64_t>(infos[k].usedGpuMemory);
        }
    }
    if (api_->process_utilization) {
      // First call sizes the buffer (NVML returns INSUFFICIENT_SIZE with the count); only samples
      // newer than the previous poll come back, so each is counted once.
      unsigned int n = 0;
      nvmlReturn_t rc = api_->process_utilization(device, nullptr, &n, last_process_sample_us_[i]);
      if ((rc == NVML_ERROR_INSUFFICIENT_SIZE || rc == NVML_SUCCESS) && n > 0) {
        std::vector<nvmlProcessUtilizationSample_t> samples(n);
        if (api_->process_utilization(device, samples.data(), &n, last_process_sample_us_[i]) ==
            NVML_SUCCESS) {
          std::map<int, unsigned long long> newest;
          for (unsigned int k = 0; k < n; ++k) {
            const auto& s = samples[k];
            auto& p = by_pid[static_cast<int>(s.pid)];
            p.pid = static_cast<int>(s.pid);
            if (s.timeStamp >= newest[p.pid]) {
              newest[p.pid] = s.timeStamp;
              p.sm_utilization_pct = s.smUtil;
            }
            last_process_sample_us_[i] = std::max(last_process_sample_us_[i], s.timeStamp);
          }
        }
      }
    }
    for (auto& [pid, p] : by_pid) r.processes.push_back(p);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> gpu_uuids_of_process(const std::vector<DeviceReading>& devices, int pid) {
  std::vector<std::string> uuids;
  for (const auto& device : devices)
    for (const auto& process : device.processes)
      if (process.pid == pid && !device.uuid.empty()) uuids.push_back(device.uuid);
  return uuids;
}

}  // namespace fleetscope::daemon
