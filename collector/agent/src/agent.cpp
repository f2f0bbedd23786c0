#include "agent.h"

#include <generated_nvtx_meta.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <thread>

#include "daemon_control.h"
#include "fleetscope/agent/environment_control.h"
#include "fleetscope/agent/line_control.h"
#include "fleetscope/agent/refusal.h"
#include "fleetscope/agent/sqlite_record_sink.h"
#include "gpu_facts.h"
#include "process_state.h"
#include "signal_chain.h"

namespace fleetscope::agent {
namespace {

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

constexpr size_t kMaxSources = 8;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void post(int fd) {
  uint64_t one = 1;
  ssize_t ignored = write(fd, &one, sizeof one);  // eventfd: never blocks (counter)
  (void)ignored;
}

void consume(int fd) {
  uint64_t value = 0;
  ssize_t ignored = read(fd, &value, sizeof value);
  (void)ignored;
}

// Waits until `fd` is readable or `timeout_ms` passed; async-signal-safe (poll, clock_gettime).
bool wait_readable(int fd, int64_t timeout_ms) {
  int64_t deadline = monotonic_ns() + timeout_ms * 1'000'000;
  for (;;) {
    int64_t left_ms = (deadline - monotonic_ns()) / 1'000'000;
    if (left_ms <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1'000'000)));
    if (n > 0) {
      consume(fd);
      return true;
    }
    if (n < 0 && errno != EINTR) return false;
  }
}

// Which pushed ranges on this thread are steps, so that a pop knows whether a step ended.
thread_local std::vector<bool> t_range_is_step;

// The calling thread's system id (what CUPTI records with CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM),
// looked up once per thread.
uint32_t this_thread_id() {
  thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

const char* ascii_message(const nvtxEventAttributes_t* attributes) {
  if (!attributes || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII) return nullptr;
  return attributes->message.ascii;
}

// CUPTI's one subscriber callback: NVTX step boundaries (while a window watches steps) and the
// API-exit callback that finalizes CUPTI after a window. Runs on application threads: it only
// posts to the control thread.
void CUPTIAPI cupti_callback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data) {
  if (!data || g_forked_child.load(std::memory_order_relaxed)) return;
  try {
    Agent& agent = Agent::instance();
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT)
        agent.on_api_exit();
      return;
    }
    if (domain != CUPTI_CB_DOMAIN_NVTX) return;
    const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA:
        agent.on_nvtx_push(
            static_cast<const nvtxRangePushA_params*>(nvtx->functionParams)->message);
        break;
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        agent.on_nvtx_push(ascii_message(
            static_cast<const nvtxRangePushEx_params*>(nvtx->functionParams)->eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        agent.on_nvtx_push(
            ascii_message(static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams)
                              ->core.eventAttrib));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        agent.on_nvtx_pop();
        break;
      default:
        break;
    }
  } catch (...) {
    log_once("internal error in a CUPTI callback; tracing continues");
  }
}

constexpr CUpti_CallbackId kNvtxCbids[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePop};

extern "C" void fleetscope_agent_at_exit() {
  if (!g_forked_child.load()) Agent::instance().at_exit();
}

void on_terminating_signal(int signal_number) {
  Agent::instance().flush_for_signal(signal_number);
}

// Blocks the signals a job is ended with on the calling thread while alive, so that threads
// created meanwhile (control, writer) inherit the mask: the kernel then delivers those signals to
// the job's own threads, where the handler can wait for the agent's threads.
class BlockTerminatingSignals {
 public:
  BlockTerminatingSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockTerminatingSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_{};
};

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

void Agent::wake() {
  if (wake_fd_ >= 0) post(wake_fd_);
}

void Agent::start() {
  if (started_) return;
  started_ = true;
  config_ = WindowConfig::from_env([](const char* name) { return std::getenv(name); });
  route_nvtx_to_our_cupti();
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  signal_ack_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  exit_ack_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0 || signal_ack_fd_ < 0 || exit_ack_fd_ < 0) {
    log_once("cannot create event descriptors; not tracing");
    return;
  }
  pool_ = std::make_unique<BufferPool>(static_cast<size_t>(config_.buffer_size_kb) * 1024,
                                       static_cast<size_t>(config_.buffer_pool_mb) << 20);
  pthread_atfork(nullptr, nullptr, mark_forked_child);
  // libcupti is mapped now, at CUDA init, not when the first window opens, and our exit handler is
  // registered after it. On an H100 (driver 580.159, CUDA 13.0) a libcupti first loaded at window
  // open made every traced process die of SIGSEGV inside libcupti at exit, with a window open or
  // already closed: its C++ static destructors (registered at dlopen, so run before handlers
  // registered earlier) ran while the CUDA runtime was still up. With libcupti mapped before the
  // runtime's own exit handler (LD_PRELOAD, or PyTorch's copy) every sample ran and exited
  // cleanly with exact counts (docs/agent.md, "On a GPU"). Mapping it loads code only: nothing is
  // subscribed or enabled until a window opens.
  std::string not_now;  // when it fails, the first window's attach tries again and says why
  load_cupti(not_now);
  std::atexit(fleetscope_agent_at_exit);

  // The control sources: the environment window, a FIFO if asked for, and the daemon.
  auto log = [](const std::string& line) { log_once(line); };
  sources_.push_back(std::make_unique<EnvironmentControl>(config_, log));
  if (!config_.control_fifo.empty())
    sources_.push_back(
        std::make_unique<LineControl>(config_.control_fifo, config_.control_reply, log));
  if (auto daemon = DaemonControl::from_environment(log)) sources_.push_back(std::move(daemon));

  if (sources_.size() > kMaxSources) sources_.resize(kMaxSources);
  BlockTerminatingSignals blocked;
  for (auto& source : sources_) source->start(*this);
  std::thread thread(&Agent::control_loop, this);
  control_thread_ = thread.native_handle();
  thread_running_.store(true);
  thread.detach();
}

// ---- control sources' requests (control thread, or start()) ----

WindowPhase Agent::phase() const {
  if (!window_) return WindowPhase::idle;
  switch (window_->state()) {
    case WindowState::waiting:
      return WindowPhase::waiting;
    case WindowState::open:
      return WindowPhase::open;
    default:
      return WindowPhase::idle;
  }
}

WindowReply Agent::open_window(const WindowRequest& request) {
  if (g_forked_child.load()) return {false, refusal::forked_child()};
  if (exited_) return {false, refusal::cannot_start_tracing("the process is exiting")};
  if (phase() != WindowPhase::idle) return {false, refusal::window_already_open()};
  std::string why;
  if (!attach_cupti(why)) return {false, why};
  window_sink_ = request.sink;
  window_ =
      std::make_unique<TraceWindow>(request.delay_ms * 1'000'000, request.duration_ms * 1'000'000,
                                    request.iterations, request.start_at_next_step);
  {
    // Step boundaries queued before this window existed (a pop racing the last window's close)
    // are not this window's.
    std::lock_guard lock(steps_mutex_);
    steps_.clear();
  }
  if (window_->watches_steps()) watch_steps(true);
  install_signal_chain(on_terminating_signal);
  int64_t now = now_ns();
  if (window_->start(now) == WindowAction::open) {
    open_session(now);
    if (!session_) {
      window_.reset();
      watch_steps(false);
      request_detach();
      return {false, last_open_error_};
    }
    window_->tracing_started(now_ns());
    return {true, "window open, writing to " + sink().destination()};
  }
  wake();  // the control thread picks up the new deadline
  if (window_->watches_steps()) return {true, "window waits for the next step"};
  return {true, "window opens in " + std::to_string(request.delay_ms) + " ms"};
}

WindowReply Agent::close_window() {
  if (phase() == WindowPhase::idle) return {false, refusal::no_window_open()};
  int64_t now = now_ns();
  if (window_->cancel() == WindowAction::close) {
    std::string where = sink().destination();
    end_session(now);
    return {true, "window closed, written to " + where};
  }
  window_.reset();
  watch_steps(false);
  request_detach();
  return {true, "waiting window cancelled"};
}

// NVTX reads NVTX_INJECTION64_PATH at the process's first NVTX call and sends every range to the
// library it names. Step windows need those ranges in the CUPTI the agent subscribes to: a job
// started by the daemon or by hand has no such variable (so its steps were never seen), and a
// PyTorch job maps its own libcupti beside the one a launcher names (so its steps went to the
// other copy). Runs in InitializeInjection, before the job's threads call NVTX after CUDA init.
void Agent::route_nvtx_to_our_cupti() {
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  if (nvtx && *nvtx) {
    const char* base = std::strrchr(nvtx, '/');
    base = base ? base + 1 : nvtx;
    // Named by the user or the launcher: trace with that copy, unless CUPTI is named too.
    if (config_.cupti_path.empty() && std::strncmp(base, "libcupti.so", 11) == 0)
      config_.cupti_path = nvtx;
    return;
  }
  std::string path = CuptiApi::preferred_path(config_.cupti_path);
  if (path.empty()) return;
  config_.cupti_path = path;  // attach loads exactly the copy NVTX reports to
  setenv("NVTX_INJECTION64_PATH", path.c_str(), 0);
}

bool Agent::load_cupti(std::string& refusal_text) {
  if (cupti_.handle) return true;
  if (!pool_) return false;
  if (std::string why = cupti_.load(config_.cupti_path); !why.empty()) {
    refusal_text = refusal::cupti_unavailable(why);
    return false;
  }
  source_ = std::make_unique<CuptiActivitySource>(cupti_, *pool_, [this] {
    buffers_ready_.store(true);
    wake();
  });
  return true;
}

bool Agent::attach_cupti(std::string& refusal_text) {
  if (!load_cupti(refusal_text)) return false;
  if (subscriber_ && kept_attached_) {
    kept_attached_ = false;
    return true;
  }
  if (subscriber_) {
    // Still attached after the last window: cancel the detach unless an application thread is
    // already finalizing, in which case wait for it (it is one CUPTI call).
    bool pending = true;
    if (finalize_pending_.compare_exchange_strong(pending, false)) {
      cupti_.enableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
      cupti_.enableDomain(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
      return true;
    }
    for (int i = 0; i < 1000 && !finalized_.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    subscriber_ = nullptr;
  }
  CUptiResult result = cupti_.subscribe(&subscriber_, cupti_callback, nullptr);
  if (result != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    std::string text = cupti_.result_text(result);
    refusal_text = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                       ? refusal::another_subscriber(text)
                       : refusal::cupti_unavailable("cuptiSubscribe: " + text);
    return false;
  }
  finalized_.store(false);
  return true;
}

void Agent::watch_steps(bool on) {
  step_watch_.store(on);
  if (!subscriber_) return;
  for (CUpti_CallbackId cbid : kNvtxCbids)
    cupti_.enableCallback(on ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid);
}

void Agent::request_detach() {
  if (!subscriber_ || finalize_pending_.load() || kept_attached_) return;
  if (config_.detach == WindowConfig::Detach::never) {
    // Every activity kind and callback of the window is off already: staying subscribed costs
    // nothing per CUDA call.
    kept_attached_ = true;
    return;
  }
  // cuptiFinalize must run from an API-exit callback (cupti_activity.h): arm it; the next CUDA
  // call of any application thread detaches CUPTI, so no overhead lingers after the window.
  finalize_pending_.store(true);
  cupti_.enableDomain(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
  cupti_.enableDomain(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API);
}

// ---- application threads (CUPTI callbacks) ----

void Agent::on_nvtx_push(const char* message) {
  if (!step_watch_.load(std::memory_order_relaxed)) return;
  bool is_step = message && config_.step_names.match(message).has_value();
  t_range_is_step.push_back(is_step);
  if (!is_step) return;
  {
    std::lock_guard lock(steps_mutex_);
    steps_.push_back({true, now_ns(), this_thread_id()});
  }
  wake();
}

void Agent::on_nvtx_pop() {
  if (t_range_is_step.empty()) return;
  bool was_step = t_range_is_step.back();
  t_range_is_step.pop_back();
  if (!was_step || !step_watch_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(steps_mutex_);
    steps_.push_back({false, now_ns(), this_thread_id()});
  }
  wake();
}

void Agent::on_api_exit() {
  bool pending = true;
  if (!finalize_pending_.compare_exchange_strong(pending, false)) return;
  cupti_.finalize();
  finalized_.store(true);
  wake();
}

// ---- signals and exit ----

void Agent::flush_for_signal(int signal_number) {
  if (g_forked_child.load() || !session_open_.load() || !thread_running_.load()) return;
  if (pthread_equal(pthread_self(), control_thread_)) return;  // cannot wait for ourselves
  if (signal_in_progress_.exchange(true)) return;  // another thread's signal is being handled
  pending_signal_.store(signal_number);
  post(wake_fd_);
  wait_readable(signal_ack_fd_, config_.signal_flush_ms);
  signal_in_progress_.store(false);
}

void Agent::at_exit() {
  if (!thread_running_.load() || pthread_equal(pthread_self(), control_thread_)) return;
  // Always through the control thread (it owns the window); with nothing open it answers at once.
  exit_requested_.store(true);
  post(wake_fd_);
  // A normal exit builds the indexes; bounded so that a stuck CUPTI never hangs the job's exit.
  wait_readable(exit_ack_fd_, std::max<int64_t>(config_.signal_flush_ms, 30'000));
}

// ---- the control thread ----

RecordSink& Agent::sink() {
  if (window_sink_) return *window_sink_;
  if (!sink_) sink_ = std::make_unique<SqliteRecordSink>(config_.output_path(getpid()));
  return *sink_;
}

std::vector<store::GpuInfo> Agent::gpu_facts() {
  if (facts_.empty()) {
    std::string why;
    facts_ = read_gpu_facts(why);
  }
  return facts_;
}

void Agent::open_session(int64_t now) {
  SessionOptions options;
  options.pid = getpid();
  options.command = command_line();
  options.hostname = host_name();
  options.step_names = config_.step_names;
  options.runtime_filter = RuntimeFilter::parse(config_.runtime_filter);
  options.gpu_facts = [this] { return gpu_facts(); };
  try {
    session_ = std::make_unique<CaptureSession>(*source_, sink(), options);
    if (session_->open(now)) {
      session_open_.store(true);
      return;
    }
    last_open_error_ = refusal::cannot_start_tracing(session_->error());
  } catch (const std::exception& e) {
    last_open_error_ = refusal::output_unavailable(e.what());
  }
  session_.reset();
}

void Agent::report(const CaptureSummary& summary) {
  WindowReport r;
  r.capture_id = summary.capture_id;
  r.destination = summary.path;
  r.complete = summary.complete;
  r.rows = summary.stats.stored;
  r.dropped_records = summary.dropped_records;
  r.note = summary.written ? summary.note : summary.error;
  for (auto& source : sources_) source->window_ended(r);
}

void Agent::end_session(int64_t now, const std::optional<ObservedStepEnd>& closing_step) {
  if (session_) {
    session_open_.store(false);
    CaptureSummary summary = session_->close(now, closing_step);
    if (!summary.written) log_once(summary.error);
    report(summary);
    session_.reset();
  }
  window_sink_.reset();
  window_.reset();
  watch_steps(false);
  request_detach();
  if (pool_) pool_->trim();
}

void Agent::carry_out(WindowAction action, int64_t now,
                      const std::optional<ObservedStepEnd>& closing_step) {
  if (action == WindowAction::open) {
    open_session(now);
    if (!session_) {
      log_once("not tracing: " + last_open_error_);
      window_.reset();
      watch_steps(false);
      request_detach();
      return;
    }
    window_->tracing_started(now_ns());  // CUPTI records from here on
  } else if (action == WindowAction::close) {
    end_session(now, closing_step);
  }
}

// Step boundaries reach the control thread late (it may have been descheduled) and in batches:
// each event carries the time its thread saw it, while the capture opens and closes at the time
// the control thread acts, which is when CUPTI really starts and stops recording.
void Agent::apply_steps(const std::deque<StepEvent>& steps) {
  for (const StepEvent& step : steps) {
    if (!window_) break;
    if (step.begin) {
      carry_out(window_->on_step_begin(step.ns), now_ns());
    } else {
      carry_out(window_->on_step_end(step.ns), now_ns(), ObservedStepEnd{step.ns, step.tid});
    }
  }
}

void Agent::control_loop() {
  for (;;) {
    try {
      // Sleep until woken, until the window's next deadline or a source's timer.
      int64_t timeout_ns = -1;
      if (window_) {
        if (auto deadline = window_->next_deadline())
          timeout_ns = std::max<int64_t>(0, *deadline - now_ns());
      }
      for (auto& source : sources_) {
        if (auto at = source->next_wakeup_ns()) {
          int64_t wait = std::max<int64_t>(0, *at - monotonic_ns());
          timeout_ns = timeout_ns < 0 ? wait : std::min(timeout_ns, wait);
        }
      }
      // On the stack: the loop allocates nothing while idle.
      std::array<pollfd, kMaxSources + 1> fds{};
      fds[0] = {wake_fd_, POLLIN, 0};
      for (size_t i = 0; i < sources_.size(); ++i) fds[i + 1] = {sources_[i]->poll_fd(), POLLIN, 0};
      int timeout_ms = timeout_ns < 0 ? -1 : static_cast<int>((timeout_ns + 999'999) / 1'000'000);
      int ready = poll(fds.data(), sources_.size() + 1, timeout_ms);
      if (ready < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (ready > 0 && (fds[0].revents & POLLIN)) consume(wake_fd_);

      if (int signal_number = pending_signal_.exchange(0)) {
        if (session_) {
          session_open_.store(false);
          report(session_->close_on_signal(now_ns(), signal_number));
          session_.reset();
        }
        window_.reset();
        post(signal_ack_fd_);
        continue;
      }
      if (exit_requested_.load()) {
        if (session_ && window_) window_->on_exit();
        if (session_) {
          session_open_.store(false);
          CaptureSummary summary = session_->close(now_ns());
          if (!summary.written) log_once(summary.error);
          report(summary);
          session_.reset();
        }
        window_.reset();
        exited_ = true;
        exit_requested_.store(false);
        post(exit_ack_fd_);
        continue;
      }
      if (buffers_ready_.exchange(false) && session_) session_->pump();

      std::deque<StepEvent> steps;
      {
        // try_lock: a signal may have interrupted an application thread between its lock and
        // unlock; waiting here would keep the signal's flush (checked first, above) from running.
        std::unique_lock lock(steps_mutex_, std::try_to_lock);
        if (lock.owns_lock())
          steps.swap(steps_);
        else
          post(wake_fd_);  // come back for them
      }
      apply_steps(steps);
      if (window_) {
        int64_t now = now_ns();
        carry_out(window_->on_time(now), now);
      }
      for (size_t i = 0; i < sources_.size(); ++i) {
        if (ready > 0 && fds[i + 1].fd >= 0 && (fds[i + 1].revents & POLLIN))
          sources_[i]->on_readable(*this);
        if (auto at = sources_[i]->next_wakeup_ns(); at && *at <= monotonic_ns())
          sources_[i]->on_timer(*this);
      }
      if (finalized_.load() && !finalize_pending_.load() && subscriber_ && !window_) {
        subscriber_ = nullptr;  // CUPTI detached; the next window subscribes again
      }
    } catch (const std::exception& e) {
      log_once(std::string("internal error in the control thread: ") + e.what());
    } catch (...) {
      log_once("internal error in the control thread");
    }
  }
}

}  // namespace fleetscope::agent

// The entry point the CUDA driver calls when CUDA_INJECTION64_PATH names this library. Returns
// nonzero ("initialized") in every case: a failing agent must leave the program running as if it
// were absent.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    fleetscope::agent::Agent::instance().start();
  } catch (const std::exception& e) {
    fleetscope::agent::log_once(std::string("disabled: ") + e.what());
  } catch (...) {
    fleetscope::agent::log_once("disabled after an internal error");
  }
  return 1;
}
