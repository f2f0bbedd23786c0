// The in-process agent: reads its window from the environment, loads CUPTI only when a window is
// configured, opens and closes the window and writes the capture. One per process.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cupti_activity_source.h"
#include "cupti_api.h"
#include "fleetscope/agent/capture_session.h"
#include "fleetscope/agent/trace_window.h"
#include "fleetscope/agent/window_config.h"

namespace fleetscope::agent {

class Agent {
 public:
  // Never destroyed: the process may exit from any thread while CUPTI still calls into us.
  static Agent& instance();
  void attach();
  void at_exit();
  void on_nvtx_push(const char* message);
  void on_nvtx_pop();

 private:
  Agent() = default;
  void control_loop();
  void carry_out(WindowAction action, int64_t now, std::unique_lock<std::mutex>& lock);
  void open_window(int64_t now);
  void close_window(int64_t now, bool detach);
  bool subscribe_nvtx();
  int64_t now_ns() const;
  std::vector<store::GpuInfo> gpu_facts();

  WindowConfig config_;
  CuptiApi cupti_;
  std::unique_ptr<CuptiActivitySource> source_;
  std::unique_ptr<CaptureSession> session_;
  std::unique_ptr<TraceWindow> window_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool close_requested_ = false;
  bool attached_ = false;
  bool finalized_ = false;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::mutex facts_mutex_;
  std::vector<store::GpuInfo> facts_;
};

// One line on stderr, the first time only: the agent must not flood the job's output.
void log_once(const std::string& message);

}  // namespace fleetscope::agent
