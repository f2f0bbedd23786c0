// The real ActivitySource: CUPTI's activity API with the agent's own capped buffers.
//
// CUPTI calls buffer_requested/buffer_completed on its own threads (and on application threads);
// those only take a buffer from the pool or queue a full one and wake the control thread. Reading
// the records, translating and writing happen in drain(), on the control thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cupti_api.h"
#include "fleetscope/agent/activity_source.h"
#include "fleetscope/agent/buffer_pool.h"

namespace fleetscope::agent {

class CuptiActivitySource final : public ActivitySource {
 public:
  // `on_ready` runs (on a CUPTI thread) whenever a full buffer was queued; it must only wake the
  // control thread.
  CuptiActivitySource(CuptiApi& api, BufferPool& pool, std::function<void()> on_ready);
  ~CuptiActivitySource() override;

  bool enable(RecordCallback on_record) override;
  void drain() override;
  void flush() override;
  void disable() override;
  int64_t dropped_records() const override { return dropped_; }
  std::string drop_reasons() const override;
  std::string api_name(store::ApiClass api, uint32_t cbid) const override;
  std::string last_error() const override { return error_; }
  // Kinds that could not be enabled (degraded capture), comma-separated; empty when all were.
  const std::string& unavailable_kinds() const { return unavailable_; }
  int64_t handling_ns() const override { return handling_ns_; }

 private:
  struct Completed {
    uint8_t* buffer;
    size_t valid_size;
  };
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                        size_t size, size_t valid_size);
  void queue(uint8_t* buffer, size_t valid_size);
  // After cuptiActivityFlushAll: waits (at most kFlushWaitMs) until every buffer CUPTI held
  // before the flush has come back. A buffer CUPTI's own thread took off its queue just before
  // the flush is delivered by that thread, possibly after the flush returned; drained without
  // it, a closing window (or a signal's last flush) would lose its rows.
  void wait_for_buffers_out_before(uint64_t handed_out);

  CuptiApi& api_;
  BufferPool& pool_;
  std::function<void()> on_ready_;
  RecordCallback on_record_;  // control thread only
  std::mutex queue_mutex_;    // held only to move buffers in and out of completed_
  std::deque<Completed> completed_;
  std::condition_variable returned_cv_;  // with queue_mutex_: a buffer came back
  std::atomic<uint64_t> handed_out_{0};  // buffers given to CUPTI (buffer_requested)
  uint64_t returned_ = 0;                // buffers CUPTI gave back (queue); under queue_mutex_
  int64_t dropped_ = 0;
  int64_t refused_at_enable_ = 0;
  int64_t late_records_ = 0;    // records drained while no window was open
  int64_t late_at_enable_ = 0;  // of those, reported with the current window
  int64_t handling_ns_ = 0;
  bool enabled_ = false;
  std::string error_;
  std::string unavailable_;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
};

}  // namespace fleetscope::agent
