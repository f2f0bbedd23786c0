// The activity buffers handed to CUPTI, with a cap on the memory they take together.
//
// CUPTI asks for a buffer whenever it needs room for records (on whatever thread it is recording
// on) and gives it back full; the agent's control thread reads it and returns it here. Past the cap
// a request is declined (CUPTI then drops records and counts them, cuptiActivityGetNumDroppedRecords)
// and the refusal is counted, so a writer that falls behind costs records, never unbounded memory.
// Defaults follow Kineto (4 MiB buffers, 128 MB in all: CuptiActivityApi's kBufSize and
// max GPU buffer size).
//
// Thread safety: acquire() and release() may be called from any thread; the lock is held only to
// move a pointer in or out of the free list (no allocation or I/O under it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace fleetscope::agent {

class BufferPool {
 public:
  static constexpr size_t kDefaultBufferBytes = size_t{4} << 20;
  static constexpr size_t kDefaultCapBytes = size_t{128} << 20;

  BufferPool(size_t buffer_bytes, size_t cap_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_bytes() (8-byte aligned, as CUPTI requires), or nullptr past the cap.
  uint8_t* acquire();
  void release(uint8_t* buffer);

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t cap_bytes() const { return cap_bytes_; }
  size_t max_buffers() const { return max_buffers_; }
  size_t outstanding() const { return outstanding_.load(); }
  int64_t refused() const { return refused_.load(); }
  int64_t take_refused() { return refused_.exchange(0); }

 private:
  size_t buffer_bytes_;
  size_t cap_bytes_;
  size_t max_buffers_;
  std::mutex mutex_;
  std::vector<uint8_t*> free_;
  std::atomic<size_t> outstanding_{0};  // handed out and not yet released
  std::atomic<int64_t> refused_{0};
};

}  // namespace fleetscope::agent
