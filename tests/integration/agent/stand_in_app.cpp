// A CUDA application played against the stand-in CUPTI: it loads the stand-in libcupti, then the
// agent the way the CUDA driver does (dlopen + InitializeInjection; the agent finds the same
// libcupti through its normal loading path), then runs one scenario and prints what it saw as
// `key=value` lines for the test to check.
//
// usage: fleetscope_stand_in_app AGENT.so|env|none|floor STAND_IN_CUPTI.so SCENARIO [ARGS...]
//   (floor: no agent; the app itself is the cheapest CUPTI client asking for the same records)
//   (env: the agent CUDA_INJECTION64_PATH names, as under `fleetscope run`)
//   windows N K            N FIFO windows of K kernels each, then one 2-iteration window over
//                          4 steps of 3 kernels (CUPTI records each END marker 30 ms late)
//   signal SIG K1 K2 [own] K1 kernels committed, K2 more in flight, then raise SIG (TERM, INT)
//                          or abort() (ABRT); `own`: the job installed its own handler first
//   fork K                 K kernels, fork without exec (the child launches and exits 7), K more
//   hold K                 CUPTI keeps its full buffers while K kernels launch (pool cap test)
//   incomplete K I         K finished kernels and I still running at the flush
//   other-subscriber K     another tool subscribed to CUPTI first and traces K kernels itself
//   latency PAIRS KERNELS  p50/p99 of NVTX push/pop pairs and of launches while another thread
//                          launches KERNELS kernels (the writer is busy)
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "stand_in_cupti.h"

namespace {

struct StandIn {
  decltype(&standin_launch_kernel) launch;
  decltype(&standin_runtime_call) runtime_call;
  decltype(&standin_nvtx_push) push;
  decltype(&standin_nvtx_pop) pop;
  decltype(&standin_hold_completions) hold;
  decltype(&standin_set_end_marker_lag_us) end_marker_lag;
  decltype(&standin_get_state) get_state;
  void* handle;
  StandInState state() const {
    StandInState s{};
    get_state(&s);
    return s;
  }
};

StandIn g;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "stand_in_app: %s\n", why.c_str());
  std::exit(3);
}

template <class F>
F symbol(void* handle, const char* name) {
  auto f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) fail(std::string("missing ") + name);
  return f;
}

void load_stand_in(const char* path) {
  g.handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!g.handle) fail(std::string("dlopen stand-in: ") + dlerror());
  g.launch = symbol<decltype(g.launch)>(g.handle, "standin_launch_kernel");
  g.runtime_call = symbol<decltype(g.runtime_call)>(g.handle, "standin_runtime_call");
  g.push = symbol<decltype(g.push)>(g.handle, "standin_nvtx_push");
  g.pop = symbol<decltype(g.pop)>(g.handle, "standin_nvtx_pop");
  g.hold = symbol<decltype(g.hold)>(g.handle, "standin_hold_completions");
  g.end_marker_lag = symbol<decltype(g.end_marker_lag)>(g.handle, "standin_set_end_marker_lag_us");
  g.get_state = symbol<decltype(g.get_state)>(g.handle, "standin_get_state");
}

// What the CUDA driver does with CUDA_INJECTION64_PATH.
void inject(const char* agent) {
  if (std::strcmp(agent, "none") == 0) return;
  if (std::strcmp(agent, "env") == 0) {  // as the driver does: CUDA_INJECTION64_PATH
    agent = std::getenv("CUDA_INJECTION64_PATH");
    if (!agent) return;
  }
  void* handle = dlopen(agent, RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail(std::string("dlopen agent: ") + dlerror());
  auto init = symbol<int (*)()>(handle, "InitializeInjection");
  init();
}

void launch(int n, const char* name = "_Z6kernelPf", int incomplete = 0) {
  for (int i = 0; i < n; ++i) g.launch(name, incomplete);
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// The stand-in's (and so the agent's and the records') clock.
long long realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

// Rows of `table` in the trace the agent is writing (-1 while it does not exist).
int64_t count_rows(const std::string& path, const char* table) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return -1;
  }
  sqlite3_busy_timeout(db, 2000);
  int64_t n = -1;
  sqlite3_stmt* stmt = nullptr;
  std::string sql = std::string("SELECT count(*) FROM ") + table;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW)
    n = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

std::string trace_path() {
  if (const char* parts = std::getenv("FLEETSCOPE_PART_DIR"))  // under `fleetscope run`
    return std::string(parts) + "/part-" + std::to_string(getpid()) + ".db";
  const char* out = std::getenv("FLEETSCOPE_OUTPUT");
  if (!out) fail("FLEETSCOPE_OUTPUT not set");
  std::string path = out;
  auto pos = path.find("%p");
  if (pos == std::string::npos) fail("FLEETSCOPE_OUTPUT needs %p for this scenario");
  return path.replace(pos, 2, std::to_string(getpid()));
}

// Waits until every kernel record CUPTI handed back is committed to the trace.
int64_t wait_committed() {
  std::string path = trace_path();
  for (int i = 0; i < 500; ++i) {
    int64_t delivered = g.state().kernels_delivered;
    int64_t rows = count_rows(path, "CUPTI_ACTIVITY_KIND_KERNEL");
    if (rows >= delivered && delivered > 0) return rows;
    sleep_ms(10);
  }
  fail("the agent did not commit the delivered buffers within 5 s");
}

// ---- FIFO operator ----

std::vector<std::string> reply_lines() {
  std::vector<std::string> lines;
  std::ifstream in(std::getenv("FLEETSCOPE_CONTROL_REPLY"));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void command(const std::string& line) {
  int fd = open(std::getenv("FLEETSCOPE_CONTROL_FIFO"), O_WRONLY);
  if (fd < 0) fail("cannot open the control FIFO");
  std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) fail("write");
  close(fd);
}

std::vector<std::string> wait_reply(size_t before, const std::string& prefix) {
  for (int i = 0; i < 500; ++i) {
    std::vector<std::string> lines = reply_lines();
    for (size_t j = before; j < lines.size(); ++j)
      if (lines[j].rfind(prefix, 0) == 0)
        return std::vector<std::string>(lines.begin() + static_cast<long>(before), lines.end());
    sleep_ms(10);
  }
  fail("no '" + prefix + "' reply within 5 s");
}

std::vector<std::string> send(const std::string& line, const std::string& prefix) {
  size_t before = reply_lines().size();
  command(line);
  return wait_reply(before, prefix);
}

// Asks for the agent's status until it answers `expected` (5 s at most).
void wait_status(const std::string& expected) {
  for (int i = 0; i < 500; ++i) {
    for (const std::string& l : send("status", "ok:"))
      if (l == expected) return;
    sleep_ms(10);
  }
  fail("the agent did not answer '" + expected + "' within 5 s");
}

int windows(int n, int k) {
  for (int w = 0; w < n; ++w) {
    for (const std::string& l : send("open", "ok:")) std::printf("reply=%s\n", l.c_str());
    launch(k);
    g.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020);  // filtered out
    for (const std::string& l : send("close", "ok:")) std::printf("reply=%s\n", l.c_str());
    // The next CUDA call's API-exit callback detaches CUPTI.
    g.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
    StandInState s = g.state();
    std::printf("window=%d finalize_calls=%lld subscribers=%d kinds=%d\n", w + 1,
                static_cast<long long>(s.finalize_calls), s.subscribers, s.activity_kinds_enabled);
  }
  // A window of 2 iterations that starts at the next step. CUPTI records each step's END marker
  // 30 ms after the pop's callbacks: the agent closes the window on the third step's pop before
  // that marker exists, and must still store that step.
  g.end_marker_lag(30'000);
  for (const std::string& l : send("open iterations=2", "ok:"))
    std::printf("reply=%s\n", l.c_str());
  size_t before = reply_lines().size();
  for (int step = 1; step <= 4; ++step) {
    long long from = realtime_ns();
    g.push("step");
    // A job does not wait for the agent; this one does, so that which kernels fall inside the
    // window does not depend on how late the control thread runs (tests/unit/agent covers late
    // batches of steps): step 1's kernels come after the window opened, step 4 after it closed.
    if (step == 1) wait_status("ok: open");
    launch(3);
    g.pop();
    long long to = realtime_ns();
    std::printf("step%d_from=%lld step%d_to=%lld\n", step, from, step, to);
    if (step == 3)
      for (const std::string& l : wait_reply(before, "ended:"))
        if (l.rfind("ended:", 0) == 0) std::printf("reply=%s\n", l.c_str());
    sleep_ms(20);
  }
  g.end_marker_lag(0);
  g.runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020);
  StandInState s = g.state();
  std::printf("finalize_calls=%lld finalize_in_api_exit=%lld\n",
              static_cast<long long>(s.finalize_calls),
              static_cast<long long>(s.finalize_in_api_exit));
  for (const std::string& l : send("close", "refused:")) std::printf("reply=%s\n", l.c_str());
  return 0;
}

// ---- signals ----

void job_handler(int signal_number) {
  char text[64];
  int n = std::snprintf(text, sizeof text, "job handler ran for signal %d\n", signal_number);
  ssize_t ignored = write(STDOUT_FILENO, text, static_cast<size_t>(n));
  (void)ignored;
  _exit(42);
}

int signal_scenario(const std::string& name, int k1, int k2) {
  launch(k1);
  int64_t committed = wait_committed();
  launch(k2);
  std::printf("committed=%lld launched=%d\n", static_cast<long long>(committed), k1 + k2);
  std::fflush(stdout);
  if (name == "ABRT") std::abort();
  raise(name == "INT" ? SIGINT : SIGTERM);
  sleep_ms(5000);
  std::printf("still alive after the signal\n");
  return 0;
}

// ---- fork ----

int fork_scenario(int k) {
  launch(k);
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    launch(5);
    std::exit(7);  // runs the atexit handlers, the agent's included
  }
  int status = 0;
  for (int i = 0; i < 500 && waitpid(child, &status, WNOHANG) == 0; ++i) sleep_ms(10);
  if (waitpid(child, &status, WNOHANG) == 0 && !WIFEXITED(status)) {
    kill(child, SIGKILL);
    fail("the forked child hung");
  }
  std::printf("child_pid=%d child_exit=%d\n", child, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  launch(k);
  return 0;
}

// ---- buffer pool cap ----

int hold_scenario(int k) {
  g.hold(1);
  launch(k);
  StandInState s = g.state();
  g.hold(0);
  std::printf("records_dropped=%lld buffers_declined=%lld buffers_requested=%lld\n",
              static_cast<long long>(s.records_dropped), static_cast<long long>(s.buffers_declined),
              static_cast<long long>(s.buffers_requested));
  return 0;
}

// ---- another CUPTI user ----

std::atomic<int64_t> g_other_kernels{0};
void CUPTIAPI other_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI other_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  auto next = reinterpret_cast<decltype(&cuptiActivityGetNextRecord)>(
      dlsym(g.handle, "cuptiActivityGetNextRecord"));
  CUpti_Activity* record = nullptr;
  while (next(buffer, valid, &record) == CUPTI_SUCCESS)
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) g_other_kernels.fetch_add(1);
  std::free(buffer);
}
void CUPTIAPI other_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// Plays torch.profiler/Kineto: subscribes and traces before the agent starts.
void become_other_tool() {
  CUpti_SubscriberHandle subscriber = nullptr;
  symbol<decltype(&cuptiSubscribe)>(g.handle, "cuptiSubscribe")(&subscriber, other_callback,
                                                                nullptr);
  symbol<decltype(&cuptiActivityRegisterCallbacks)>(g.handle, "cuptiActivityRegisterCallbacks")(
      other_request, other_complete);
  symbol<decltype(&cuptiActivityEnable)>(
      g.handle, "cuptiActivityEnable")(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

int other_subscriber(int k) {
  launch(k);
  symbol<decltype(&cuptiActivityFlushAll)>(
      g.handle, "cuptiActivityFlushAll")(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  StandInState s = g.state();
  std::printf("other_tool_kernels=%lld finalize_calls=%lld subscribers=%d kinds=%d\n",
              static_cast<long long>(g_other_kernels.load()),
              static_cast<long long>(s.finalize_calls), s.subscribers, s.activity_kinds_enabled);
  return 0;
}

// ---- latency ----

// The reference of bench_agent_hot_path: the cheapest CUPTI client that asks the stand-in for the
// same work as the agent's window (the same activity kinds written into 4 MiB client buffers, NVTX
// callbacks on, as a step window has them), and does nothing with it. Anything the agent costs
// above this is the agent's own.
void CUPTIAPI floor_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 4u << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}
void CUPTIAPI floor_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  std::free(buffer);
}
void become_floor_client() {
  CUpti_SubscriberHandle subscriber = nullptr;
  symbol<decltype(&cuptiSubscribe)>(g.handle, "cuptiSubscribe")(&subscriber, other_callback,
                                                                nullptr);
  symbol<decltype(&cuptiEnableDomain)>(g.handle, "cuptiEnableDomain")(1, subscriber,
                                                                      CUPTI_CB_DOMAIN_NVTX);
  symbol<decltype(&cuptiActivityRegisterCallbacks)>(g.handle, "cuptiActivityRegisterCallbacks")(
      floor_request, floor_complete);
  auto enable = symbol<decltype(&cuptiActivityEnable)>(g.handle, "cuptiActivityEnable");
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                  CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_MARKER})
    enable(kind);
}

struct Percentiles {
  double p50, p99, max;
};
Percentiles percentiles(std::vector<double>& ns) {
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[static_cast<size_t>(q * static_cast<double>(ns.size() - 1))];
  };
  return {at(0.5), at(0.99), ns.back()};
}

int latency(int pairs, int kernels, bool traced) {
  if (traced) {
    // The window opens at the first step: wait until the control thread opened it, so that the
    // whole measurement runs against an open window.
    g.push("step");
    g.pop();
    for (int i = 0; i < 500 && g.state().activity_kinds_enabled == 0; ++i) sleep_ms(10);
    if (g.state().activity_kinds_enabled == 0) fail("the window did not open");
  }
  std::thread busy([&] {
    for (int i = 0; i < kernels; ++i) g.launch("_Z4busyPf", 0);
  });
  std::vector<double> nvtx, launches;
  nvtx.reserve(static_cast<size_t>(pairs));
  launches.reserve(static_cast<size_t>(pairs));
  for (int i = 0; i < pairs; ++i) {
    // Every 50th range is a step: its push and pop go to the control thread's queue.
    const char* name = i % 50 == 0 ? "step" : "forward";
    auto t0 = std::chrono::steady_clock::now();
    g.push(name);
    g.pop();
    auto t1 = std::chrono::steady_clock::now();
    g.launch("_Z6kernelPf", 0);
    auto t2 = std::chrono::steady_clock::now();
    nvtx.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    launches.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count());
    if (i % 64 == 0) std::this_thread::yield();
  }
  busy.join();
  // How far the writer was behind when the measurement ended.
  int64_t committed = traced ? count_rows(trace_path(), "CUPTI_ACTIVITY_KIND_KERNEL") : 0;
  Percentiles n = percentiles(nvtx), l = percentiles(launches);
  std::printf("nvtx_p50_ns=%.0f nvtx_p99_ns=%.0f nvtx_max_ns=%.0f\n", n.p50, n.p99, n.max);
  std::printf("launch_p50_ns=%.0f launch_p99_ns=%.0f launch_max_ns=%.0f\n", l.p50, l.p99, l.max);
  std::printf("kernels_launched=%d committed_when_measured=%lld\n", kernels + pairs,
              static_cast<long long>(committed));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s AGENT.so|none|floor STAND_IN.so SCENARIO [ARGS...]\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // abort() scenarios: no core files in the test directory
  std::string scenario = argv[3];
  auto arg = [&](int i) { return i < argc ? std::atoi(argv[i]) : 0; };
  load_stand_in(argv[2]);
  if (scenario == "signal" && argc > 7 && std::string(argv[7]) == "own") {
    ::signal(SIGTERM, job_handler);
    ::signal(SIGINT, job_handler);
    ::signal(SIGABRT, job_handler);
  }
  if (scenario == "other-subscriber") become_other_tool();
  bool floor_client = std::strcmp(argv[1], "floor") == 0;
  if (floor_client)
    become_floor_client();
  else
    inject(argv[1]);
  if (scenario == "windows") return windows(arg(4), arg(5));
  if (scenario == "signal") return signal_scenario(argc > 4 ? argv[4] : "TERM", arg(5), arg(6));
  if (scenario == "fork") return fork_scenario(arg(4));
  if (scenario == "hold") return hold_scenario(arg(4));
  if (scenario == "incomplete") {
    launch(arg(4));
    launch(arg(5), "_Z7runningPf", 1);
    StandInState s = g.state();
    std::printf("subscribers=%d kinds=%d buffers_requested=%lld\n", s.subscribers,
                s.activity_kinds_enabled, static_cast<long long>(s.buffers_requested));
    return 0;
  }
  if (scenario == "other-subscriber") return other_subscriber(arg(4));
  if (scenario == "latency")
    return latency(arg(4), arg(5), std::strcmp(argv[1], "none") != 0 && !floor_client);
  fail("unknown scenario " + scenario);
}
