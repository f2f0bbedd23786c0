// NVML's memory queries, so tools and frameworks that size themselves from NVML (nvidia-smi-like
// monitors, pynvml) see the lane too. With FLEETSCOPE_LANE_GPU_UUID set only that device's answer
// is rewritten (NVML enumerates every GPU, ignoring CUDA_VISIBLE_DEVICES).

#include <algorithm>
#include <atomic>
#include <cstring>

#include "hook_table.h"
#include "lane_state.h"
#include "real_symbols.h"

using namespace fleetscope::interpose;

namespace {

std::atomic<void*> g_get_uuid{nullptr};

bool is_lane_device(nvmlDevice_t device) {
  LaneState& lane = LaneState::instance();
  if (!lane.enforcing() || lane.broken()) return false;
  if (lane.capacity() == fleetscope::lanes::LaneSegment::kUnlimited) return false;
  if (lane.gpu_uuid().empty()) return true;
  void* known = g_get_uuid.load(std::memory_order_acquire);
  if (!known) {
    known = real_nvml_symbol("nvmlDeviceGetUUID");
    g_get_uuid.store(known, std::memory_order_release);
  }
  char uuid[96] = {};
  auto get_uuid = reinterpret_cast<nvmlDeviceGetUUID_t>(known);
  return get_uuid && get_uuid(device, uuid, sizeof uuid) == NVML_SUCCESS && lane.gpu_uuid() == uuid;
}

// Rewrites total/free/used to the lane's view.
void lane_view(unsigned long long* total, unsigned long long* free_bytes,
               unsigned long long* used) {
  LaneState& lane = LaneState::instance();
  unsigned long long capacity = std::min<unsigned long long>(*total, lane.capacity());
  unsigned long long lane_used = std::min<unsigned long long>(lane.lane_used(), capacity);
  *total = capacity;
  *used = lane_used;
  *free_bytes = std::min<unsigned long long>(*free_bytes, capacity - lane_used);
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  auto real = real_function<nvmlDeviceGetMemoryInfo_t>(Hook::kNvmlMemoryInfo);
  if (!real) return 1;  // NVML_ERROR_UNINITIALIZED
  nvmlReturn_t result = real(device, memory);
  if (result == NVML_SUCCESS && memory && is_lane_device(device)) {
    lane_view(&memory->total, &memory->free, &memory->used);
  }
  return result;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  auto real = real_function<nvmlDeviceGetMemoryInfo_v2_t>(Hook::kNvmlMemoryInfoV2);
  if (!real) return 1;  // NVML_ERROR_UNINITIALIZED
  nvmlReturn_t result = real(device, memory);
  if (result == NVML_SUCCESS && memory && is_lane_device(device)) {
    lane_view(&memory->total, &memory->free, &memory->used);
  }
  return result;
}

}  // extern "C"
