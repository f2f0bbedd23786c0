// A stand-in libnvidia-ml.so.1: one device whose memory information mirrors the stand-in
// libcuda's byte counter (FLEETSCOPE_STANDIN_DEVICE_BYTES / FLEETSCOPE_STANDIN_DEVICE_FILE), and
// the identity of the stand-in GPU 0 (tests/support/stand_in_gpu.h: the daemon's stand-in NVML
// names it the same way).

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "stand_in_gpu.h"

namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0, kInvalidArgument = 2, kInsufficientSize = 7;
struct nvmlDevice_st {
  int index;
};
nvmlDevice_st g_device{0};

uint64_t total_bytes() {
  const char* bytes = std::getenv("FLEETSCOPE_STANDIN_DEVICE_BYTES");
  return bytes ? std::strtoull(bytes, nullptr, 10) : (16ull << 30);
}

uint64_t used_bytes() {
  const char* file = std::getenv("FLEETSCOPE_STANDIN_DEVICE_FILE");
  if (!file) return 0;
  int fd = ::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t used = 0;
  if (::pread(fd, &used, sizeof used, 0) != static_cast<ssize_t>(sizeof used)) used = 0;
  ::close(fd);
  return used;
}

}  // namespace

extern "C" {

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};

nvmlReturn_t nvmlInit_v2() {
  return kSuccess;
}
nvmlReturn_t nvmlShutdown() {
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!count) return kInvalidArgument;
  *count = 1;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_st** device) {
  if (!device || index != 0) return kInvalidArgument;
  *device = &g_device;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned int length) {
  if (device != &g_device || !uuid) return kInvalidArgument;
  char text[FLEETSCOPE_STAND_IN_GPU_TEXT_SIZE];
  const int size = fleetscope_stand_in_gpu_uuid(device->index, text, sizeof text);
  if (size < 0 || static_cast<unsigned int>(size) >= length) return kInsufficientSize;
  std::memcpy(uuid, text, static_cast<size_t>(size) + 1);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, nvmlMemory_t* memory) {
  if (device != &g_device || !memory) return kInvalidArgument;
  memory->total = total_bytes();
  memory->used = used_bytes();
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_st* device, nvmlMemory_v2_t* memory) {
  if (device != &g_device || !memory) return kInvalidArgument;
  memory->total = total_bytes();
  memory->reserved = 0;
  memory->used = used_bytes();
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return kSuccess;
}

}  // extern "C"
