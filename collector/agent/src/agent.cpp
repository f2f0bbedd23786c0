#include "agent.h"

#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>

#include "gpu_facts.h"

namespace fleetscope::agent {
namespace {

// A child forked without exec inherits the agent's state but not its threads (writer, control):
// it must not touch that state, or it would wait forever on threads that do not exist.
std::atomic<bool> g_forked_child{false};
void mark_forked_child() {
  g_forked_child.store(true);
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// Which pushed ranges on this thread are steps, so that a pop knows whether a step ended.
thread_local std::vector<bool> t_range_is_step;

const char* ascii_message(const nvtxEventAttributes_t* attributes) {
  if (!attributes || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII) return nullptr;
  return attributes->message.ascii;
}

void CUPTIAPI nvtx_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data) {
  if (domain != CUPTI_CB_DOMAIN_NVTX || !data || g_forked_child.load()) return;
  try {
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        Agent::instance().on_nvtx_push(
            static_cast<const nvtxRangePushA_params*>(nvtx->functionParams)->message);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        Agent::instance().on_nvtx_push(ascii_message(
            static_cast<const nvtxRangePushEx_params*>(nvtx->functionParams)->eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        Agent::instance().on_nvtx_push(
            ascii_message(static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams)
                              ->core.eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        Agent::instance().on_nvtx_pop();
        break;
      default:
        break;
    }
  } catch (...) {
    log_once("internal error in the NVTX callback; tracing continues");
  }
}

extern "C" void fleetscope_agent_at_exit() {
  if (!g_forked_child.load()) Agent::instance().at_exit();
}

}  // namespace

void log_once(const std::string& message) {
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  std::fprintf(stderr, "[fleetscope-agent] %s\n", message.c_str());
}

Agent& Agent::instance() {
  static Agent* agent = new Agent();
  return *agent;
}

int64_t Agent::now_ns() const {
  uint64_t t = 0;
  if (cupti_.getTimestamp && cupti_.getTimestamp(&t) == CUPTI_SUCCESS)
    return static_cast<int64_t>(t);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void Agent::attach() {
  std::unique_lock lock(mutex_);
  if (attached_) return;
  attached_ = true;
  config_ = WindowConfig::from_env([](const char* name) { return std::getenv(name); });
  if (!config_.active) return;  // idle: nothing loaded, nothing enabled
  if (!config_.problems.empty()) log_once(config_.problems.front());

  if (std::string why = cupti_.load(config_.cupti_path); !why.empty()) {
    log_once(why + "; not tracing");
    return;
  }
  // CUPTI sees NVTX ranges (MARKER records, iteration windows) only when NVTX_INJECTION64_PATH
  // names libcupti; `fleetscope run` sets it. The agent does not setenv() it here: the job's other
  // threads may be reading the environment, and setenv is not thread-safe.
  source_ = std::make_unique<CuptiActivitySource>(
      cupti_, static_cast<size_t>(config_.buffer_size_kb) * 1024);
  window_ = std::make_unique<TraceWindow>(config_.delay_ms * 1'000'000,
                                          config_.duration_ms * 1'000'000, config_.iterations);
  if (config_.iterations > 0 && !subscribe_nvtx()) return;
  std::atexit(fleetscope_agent_at_exit);
  pthread_atfork(nullptr, nullptr, mark_forked_child);
  WindowAction first = window_->start(now_ns());
  carry_out(first, now_ns(), lock);
  // A window that could not open at attach (already reported) needs no thread to close it.
  if (first == WindowAction::open && !session_) return;
  std::thread(&Agent::control_loop, this).detach();
}

bool Agent::subscribe_nvtx() {
  CUptiResult result = cupti_.subscribe(&subscriber_, nvtx_callback, nullptr);
  if (result != CUPTI_SUCCESS) {
    // Another tool (e.g. torch.profiler) holds CUPTI's only subscriber slot.
    log_once("cannot watch NVTX steps (cuptiSubscribe: " + cupti_.result_text(result) +
             "); not tracing");
    subscriber_ = nullptr;
    return false;
  }
  for (CUpti_CallbackId cbid : {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
                                CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
                                CUPTI_CBID_NVTX_nvtxDomainRangePop})
    cupti_.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid);
  return true;
}

void Agent::on_nvtx_push(const char* message) {
  bool is_step = message && config_.step_names.match(message).has_value();
  t_range_is_step.push_back(is_step);
  if (!is_step) return;
  std::unique_lock lock(mutex_);
  if (!window_ || stopping_) return;
  int64_t now = now_ns();
  carry_out(window_->on_step_begin(now), now, lock);
}

void Agent::on_nvtx_pop() {
  if (t_range_is_step.empty()) return;
  bool was_step = t_range_is_step.back();
  t_range_is_step.pop_back();
  if (!was_step) return;
  std::unique_lock lock(mutex_);
  if (!window_ || stopping_) return;
  int64_t now = now_ns();
  carry_out(window_->on_step_end(now), now, lock);
}

void Agent::carry_out(WindowAction action, int64_t now, std::unique_lock<std::mutex>& /*held*/) {
  if (action == WindowAction::open) {
    open_window(now);
    wake_.notify_all();
  } else if (action == WindowAction::close) {
    // Flushing and detaching CUPTI happen on the control thread, never inside a CUDA/NVTX call.
    close_requested_ = true;
    wake_.notify_all();
  }
}

std::vector<store::GpuInfo> Agent::gpu_facts() {
  std::lock_guard lock(facts_mutex_);
  if (facts_.empty()) {
    std::string why;
    facts_ = read_gpu_facts(why);
  }
  return facts_;
}

void Agent::open_window(int64_t now) {
  SessionOptions options;
  options.output_path = config_.output_path(getpid());
  options.pid = getpid();
  options.command = command_line();
  options.hostname = host_name();
  options.step_names = config_.step_names;
  options.gpu_facts = [this] { return gpu_facts(); };
  session_ = std::make_unique<CaptureSession>(*source_, options);
  if (!session_->open(now)) {
    log_once(session_->error() + "; not tracing");
    session_.reset();
  }
}

void Agent::close_window(int64_t now, bool detach) {
  close_requested_ = false;
  if (session_) {
    CaptureSummary summary = session_->close(now);
    if (!summary.written) log_once(summary.error);
    session_.reset();
  }
  if (subscriber_) {
    cupti_.unsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  // Detach CUPTI so that nothing lingers after the window (not at exit: the driver may be going).
  if (detach && !finalized_) {
    finalized_ = true;
    cupti_.finalize();
  }
}

void Agent::control_loop() {
  try {
    // GPU facts are read once the driver finished initializing (this thread starts inside cuInit).
    for (int attempt = 0; attempt < 40; ++attempt) {
      if (!gpu_facts().empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (close_requested_) {
        close_window(now_ns(), true);
        return;
      }
      auto deadline = window_->next_deadline();
      if (window_->state() == WindowState::closed) return;
      if (deadline) {
        int64_t wait = *deadline - now_ns();
        if (wait > 0) wake_.wait_for(lock, std::chrono::nanoseconds(wait));
        if (stopping_) return;
        int64_t now = now_ns();
        carry_out(window_->on_time(now), now, lock);
      } else {
        wake_.wait(lock);
      }
    }
  } catch (...) {
    log_once("internal error in the control thread; tracing stopped");
  }
}

void Agent::at_exit() {
  try {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    if (window_ && window_->on_exit() == WindowAction::close)
      close_window(now_ns(), false);
    else if (close_requested_)
      close_window(now_ns(), false);
    wake_.notify_all();
  } catch (...) {
    log_once("internal error while writing the trace at exit");
  }
}

}  // namespace fleetscope::agent

// The entry point the CUDA driver calls when CUDA_INJECTION64_PATH names this library. Returns
// nonzero ("initialized") in every case: a failing agent must leave the program running as if it
// were absent.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    fleetscope::agent::Agent::instance().attach();
  } catch (const std::exception& e) {
    fleetscope::agent::log_once(std::string("disabled: ") + e.what());
  } catch (...) {
    fleetscope::agent::log_once("disabled after an internal error");
  }
  return 1;
}
