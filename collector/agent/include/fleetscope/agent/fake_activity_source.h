// An ActivitySource that replays CUPTI records given to it, for tests and for machines without a
// GPU. Records are copied when pushed and handed out in push order on drain() and flush().
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "fleetscope/agent/activity_source.h"

namespace fleetscope::agent {

class FakeActivitySource final : public ActivitySource {
 public:
  template <class Record>
  void push(const Record& record) {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::make_shared<Record>(record));
  }
  void set_api_name(store::ApiClass api, uint32_t cbid, std::string name) {
    names_[{static_cast<int>(api), cbid}] = std::move(name);
  }
  void set_dropped_records(int64_t n) { dropped_ = n; }
  void fail_enable(std::string why) { enable_error_ = std::move(why); }

  bool enable(RecordCallback on_record) override {
    if (!enable_error_.empty()) return false;
    std::lock_guard lock(mutex_);
    on_record_ = std::move(on_record);
    enabled_ = true;
    return true;
  }
  void flush() override { drain(); }
  void drain() override {
    std::vector<std::shared_ptr<void>> batch;
    RecordCallback callback;
    {
      std::lock_guard lock(mutex_);
      if (!enabled_) return;
      batch.swap(pending_);
      callback = on_record_;
    }
    for (const auto& record : batch) callback(*static_cast<const CUpti_Activity*>(record.get()));
  }
  void disable() override {
    std::lock_guard lock(mutex_);
    enabled_ = false;
    on_record_ = nullptr;
  }
  int64_t dropped_records() const override { return dropped_; }
  std::string drop_reasons() const override { return dropped_ ? "test drops" : ""; }
  int64_t handling_ns() const override { return handling_; }
  void set_handling_ns(int64_t ns) { handling_ = ns; }
  std::string api_name(store::ApiClass api, uint32_t cbid) const override {
    auto it = names_.find({static_cast<int>(api), cbid});
    return it == names_.end() ? std::string() : it->second;
  }
  std::string last_error() const override { return enable_error_; }
  bool enabled() const { return enabled_; }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<void>> pending_;
  RecordCallback on_record_;
  bool enabled_ = false;
  int64_t dropped_ = 0;
  int64_t handling_ = 0;
  std::string enable_error_;
  std::map<std::pair<int, uint32_t>, std::string> names_;
};

}  // namespace fleetscope::agent
