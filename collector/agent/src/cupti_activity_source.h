// The real ActivitySource: CUPTI's activity API with the agent's own buffers.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "cupti_api.h"
#include "fleetscope/agent/activity_source.h"

namespace fleetscope::agent {

class CuptiActivitySource final : public ActivitySource {
 public:
  CuptiActivitySource(CuptiApi& api, size_t buffer_bytes);
  ~CuptiActivitySource() override;

  bool enable(RecordCallback on_record) override;
  void flush() override;
  void disable() override;
  int64_t dropped_records() const override { return dropped_.load(); }
  std::string api_name(store::ApiClass api, uint32_t cbid) const override;
  std::string last_error() const override { return error_; }
  // Kinds that could not be enabled (degraded capture), comma-separated; empty when all were.
  const std::string& unavailable_kinds() const { return unavailable_; }
  // Time spent in CUPTI's buffer callbacks (record iteration and translation).
  int64_t handling_ns() const override { return handling_ns_.load(); }

 private:
  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                        size_t size, size_t valid_size);
  void deliver(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t valid_size);

  CuptiApi& api_;
  size_t buffer_bytes_;
  RecordCallback on_record_;
  std::mutex deliver_mutex_;
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> handling_ns_{0};
  std::atomic<bool> enabled_{false};
  std::string error_;
  std::string unavailable_;
  std::vector<CUpti_ActivityKind> enabled_kinds_;
};

}  // namespace fleetscope::agent
