// Device sampling through NVML, loaded with dlopen (never linked): the daemon runs on hosts without
// a driver, says once why sampling is off, and everything else works. Entry points and struct
// layouts are those of NVML's nvml.h (API version 12, the `_v2`/`_v3` symbols drivers >= 450
// export); they are declared here so that building needs no nvml.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fleetscope::daemon {

struct ProcessReading {
  int pid = 0;
  std::optional<int64_t> memory_used_bytes;  // nvmlDeviceGetComputeRunningProcesses_v3
  std::optional<double> sm_utilization_pct;  // nvmlDeviceGetProcessUtilization, newest sample
};

struct DeviceReading {
  int index = 0;
  std::string name;
  std::string uuid;
  std::optional<double> gpu_utilization_pct;     // nvmlUtilization_t.gpu: % of time a kernel ran
  std::optional<double> memory_utilization_pct;  // nvmlUtilization_t.memory
  std::optional<int64_t> memory_used_bytes, memory_total_bytes;
  std::optional<double> power_watts;  // nvmlDeviceGetPowerUsage (mW)
  std::optional<int64_t> sm_clock_mhz, graphics_clock_mhz, memory_clock_mhz;
  std::vector<ProcessReading> processes;
};

// The UUIDs of the GPUs whose per-process list in `devices` shows `pid`.
std::vector<std::string> gpu_uuids_of_process(const std::vector<DeviceReading>& devices, int pid);

class NvmlSampler {
 public:
  // Loads `library` (default: the driver's libnvidia-ml.so.1) and initializes NVML. When that
  // fails, available() is false and note() says why; sample() then returns nothing.
  explicit NvmlSampler(const std::string& library = "libnvidia-ml.so.1");
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const { return available_; }
  const std::string& note() const { return note_; }
  int device_count() const { return device_count_; }
  std::vector<DeviceReading> sample();

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  bool available_ = false;
  std::string note_;
  int device_count_ = 0;
  std::vector<unsigned long long> last_process_sample_us_;
};

}  // namespace fleetscope::daemon
