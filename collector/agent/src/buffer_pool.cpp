#include "fleetscope/agent/buffer_pool.h"

#include <algorithm>
#include <cstdlib>

namespace fleetscope::agent {
namespace {
constexpr size_t kAlign = 8;  // CUPTI requires 8-byte aligned activity buffers
}

BufferPool::BufferPool(size_t buffer_bytes, size_t cap_bytes)
    : buffer_bytes_((std::max<size_t>(buffer_bytes, 1024) + kAlign - 1) / kAlign * kAlign),
      cap_bytes_(cap_bytes),
      max_buffers_(std::max<size_t>(1, cap_bytes / buffer_bytes_)) {}

BufferPool::~BufferPool() {
  for (uint8_t* buffer : free_) std::free(buffer);
}

uint8_t* BufferPool::acquire() {
  // Reserve a slot first, so concurrent requests never exceed the cap together.
  size_t before = outstanding_.fetch_add(1);
  if (before >= max_buffers_) {
    outstanding_.fetch_sub(1);
    refused_.fetch_add(1);
    return nullptr;
  }
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      uint8_t* buffer = free_.back();
      free_.pop_back();
      return buffer;
    }
  }
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, buffer_bytes_));
  if (!buffer) {
    outstanding_.fetch_sub(1);
    refused_.fetch_add(1);
  }
  return buffer;
}

void BufferPool::release(uint8_t* buffer) {
  if (!buffer) return;
  {
    std::lock_guard lock(mutex_);
    // Keep at most a few buffers for reuse; the rest goes back to the system.
    if (free_.size() < 4) {
      free_.push_back(buffer);
      buffer = nullptr;
    }
  }
  std::free(buffer);
  outstanding_.fetch_sub(1);
}

}  // namespace fleetscope::agent
