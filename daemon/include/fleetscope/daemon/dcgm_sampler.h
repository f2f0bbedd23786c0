// DCGM profiling fields, when libdcgm is on the host: SM active (DCGM_FI_PROF_SM_ACTIVE, 1002),
// SM occupancy (DCGM_FI_PROF_SM_OCCUPANCY, 1003) and tensor pipe active
// (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, 1004), each a ratio 0..1 averaged over DCGM's update period.
// libdcgm is loaded with dlopen (never linked): libdcgm.so.4 (DCGM 4), then libdcgm.so.3
// (DCGM 3), then libdcgm.so, unless a library is configured. Without it, available() is false and
// note() says why once; everything else works.
//
// Profiling counters and CUPTI cannot be used on a GPU at the same time, so the daemon pauses
// these fields on the GPUs of a process while a CUPTI window is open in it and resumes them after
// (Dynolog does the same around its traces, with the host-wide dcgmProfPause; here each GPU has
// its own DCGM group, so only the GPUs being traced stop, by unwatching their fields).
//
// The entry points and structs used are declared in dcgm_sampler.cpp from DCGM's public headers
// (dcgm_agent.h, dcgm_structs.h, dcgm_fields.h), so building needs no DCGM.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fleetscope::daemon {

// DCGM field ids (dcgm_fields.h).
inline constexpr unsigned short kDcgmSmActive = 1002;
inline constexpr unsigned short kDcgmSmOccupancy = 1003;
inline constexpr unsigned short kDcgmTensorActive = 1004;

struct ProfilingReading {
  int gpu = 0;  // DCGM GPU id (the NVML index on a host without MIG)
  std::optional<double> sm_active, sm_occupancy, tensor_active;  // ratios 0..1
};

class DcgmSampler {
 public:
  // library: empty = the default list above. hostengine: empty = an embedded host engine in the
  // daemon (dcgmStartEmbedded), else the address of a running nv-hostengine (dcgmConnect).
  // update_interval_ms: how often DCGM updates the fields.
  DcgmSampler(const std::string& library, const std::string& hostengine,
              int64_t update_interval_ms);
  ~DcgmSampler();
  DcgmSampler(const DcgmSampler&) = delete;
  DcgmSampler& operator=(const DcgmSampler&) = delete;

  bool available() const { return available_; }
  const std::string& note() const { return note_; }
  const std::string& library() const { return library_; }
  const std::vector<int>& gpus() const { return gpus_; }

  // Unwatches the fields on `gpus` (ids not present are ignored) and watches them again on every
  // other GPU that was paused. Not thread-safe: the daemon serializes calls.
  void set_paused(const std::set<int>& gpus);
  const std::set<int>& paused() const { return paused_; }

  // The latest values of the GPUs that are not paused (DCGM's cache, refreshed first).
  std::vector<ProfilingReading> sample();

 private:
  struct Api;
  bool watch(size_t index);
  std::unique_ptr<Api> api_;
  void* handle_ = nullptr;
  bool available_ = false;
  bool embedded_ = true;
  std::string note_, library_;
  uintptr_t dcgm_ = 0;         // dcgmHandle_t
  uintptr_t field_group_ = 0;  // dcgmFieldGrp_t
  std::vector<int> gpus_;
  std::vector<uintptr_t> groups_;  // dcgmGpuGrp_t, one per GPU (same order as gpus_)
  std::set<int> paused_;
  int64_t update_interval_us_ = 1'000'000;
};

}  // namespace fleetscope::daemon
