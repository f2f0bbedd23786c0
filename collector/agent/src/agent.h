// The in-process agent: resident from InitializeInjection on, idle (no CUPTI loaded) until a
// control source asks for a window; opens and closes any number of windows; writes them through
// a record sink. One per process, never destroyed.
//
// Threads and locks. One control thread (started by InitializeInjection) owns every state change:
// it loads CUPTI, subscribes, enables and disables activity, reads the activity buffers, writes
// rows and requests the detach. Application threads and CUPTI's threads only post to it: NVTX step
// boundaries go through a short queue lock (never held across a CUPTI call or I/O), full buffers
// through the activity source's queue, signals and exit through atomics and an eventfd. CUPTI is
// finalized from an API-exit callback on an application thread, as NVIDIA documents
// (cupti_activity.h, cuptiFinalize) and Kineto does.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cupti_activity_source.h"
#include "cupti_api.h"
#include "fleetscope/agent/buffer_pool.h"
#include "fleetscope/agent/capture_session.h"
#include "fleetscope/agent/control_source.h"
#include "fleetscope/agent/record_sink.h"
#include "fleetscope/agent/trace_window.h"
#include "fleetscope/agent/window_config.h"

namespace fleetscope::agent {

class Agent final : public WindowController {
 public:
  static Agent& instance();
  // InitializeInjection: reads the settings, starts the control sources and the control thread.
  void start();

  // WindowController: called by control sources (start(), then the control thread only).
  WindowReply open_window(const WindowRequest& request) override;
  WindowReply close_window() override;
  WindowPhase phase() const override;

  // From CUPTI callbacks on application threads.
  void on_nvtx_push(const char* message);
  void on_nvtx_pop();
  void on_api_exit();
  // From the signal handler (async-signal-safe) and from atexit.
  void flush_for_signal(int signal_number);
  void at_exit();

 private:
  struct StepEvent {
    bool begin;
    int64_t ns;    // when the application thread saw it (CUPTI's clock)
    uint32_t tid;  // that thread (system id, as CUPTI records it)
  };
  Agent() = default;
  void wake();
  void control_loop();
  void handle_wake();
  void carry_out(WindowAction action, int64_t now,
                 const std::optional<ObservedStepEnd>& closing_step = std::nullopt);
  void apply_steps(const std::deque<StepEvent>& steps);
  bool attach_cupti(std::string& refusal);
  void route_nvtx_to_our_cupti();
  bool load_cupti(std::string& refusal);
  void watch_steps(bool on);
  void request_detach();
  void open_session(int64_t now);
  void end_session(int64_t now, const std::optional<ObservedStepEnd>& closing_step = std::nullopt);
  void report(const CaptureSummary& summary);
  RecordSink& sink();
  int64_t now_ns() const;
  std::vector<store::GpuInfo> gpu_facts();

  WindowConfig config_;
  std::vector<std::unique_ptr<ControlSource>> sources_;
  CuptiApi cupti_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<CuptiActivitySource> source_;
  std::unique_ptr<RecordSink> sink_;         // the standalone file, made on first use
  std::shared_ptr<RecordSink> window_sink_;  // the open window's sink when its source gave one
  std::unique_ptr<CaptureSession> session_;
  std::unique_ptr<TraceWindow> window_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  // The subscriber was kept after a window (FLEETSCOPE_DETACH): the next window reuses it.
  bool kept_attached_ = false;
  bool started_ = false;
  bool exited_ = false;
  std::vector<store::GpuInfo> facts_;
  std::string last_open_error_;

  // Shared with application threads, CUPTI threads and signal handlers.
  int wake_fd_ = -1, signal_ack_fd_ = -1, exit_ack_fd_ = -1;
  pthread_t control_thread_{};
  std::atomic<bool> thread_running_{false};
  std::atomic<bool> session_open_{false};
  std::atomic<bool> step_watch_{false};
  std::atomic<bool> finalize_pending_{false};
  std::atomic<bool> finalized_{false};
  std::atomic<bool> buffers_ready_{false};
  std::atomic<int> pending_signal_{0};
  std::atomic<bool> signal_in_progress_{false};
  std::atomic<bool> exit_requested_{false};
  std::mutex steps_mutex_;  // held only to push or swap the queue
  std::deque<StepEvent> steps_;
};

// One line on stderr, the first time only: the agent must not flood the job's output.
void log_once(const std::string& message);

}  // namespace fleetscope::agent
