// A process that acts as a job with the fleetscope agent loaded, for the daemon's integration
// tests: it registers through the agent link client library (the code the real agent links),
// waits for window orders, and streams synthetic kernel rows in record batches.
//   test_agent --socket PATH [--children N] [--kernels K] [--batch-rows B]
//              [--crash-after-batches C] [--cupti-busy] [--lifetime-ms T]
//              [--step-us S --busy-us B]
// With --step-us, kernel i runs B µs at the start of step i (S µs long, one iteration row each):
// the job keeps its GPU B/S busy at S µs per iteration, on the stand-in GPU 0 as NVML names it.
// stdout lines (for the test to wait on): "registered pid=P agent=A", "window capture=C rows=R",
// "crashing after N batches acked=S" (S: the committed sequence the daemon last acknowledged).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/agent_link/batch_builder.h"
#include "fleetscope/agent_link/link_client.h"
#include "fleetscope/agent_link/process_facts.h"
#include "stand_in_gpu.h"

namespace {

struct Options {
  std::string socket;
  int children = 0;
  int kernels = 1000;
  int batch_rows = 256;
  int crash_after_batches = -1;
  bool cupti_busy = false;
  int lifetime_ms = 60'000;
  int64_t step_ns = 0;  // 0: kernels back to back, no iterations
  int64_t busy_ns = 0;
};

std::atomic<bool> stop_requested{false};
std::atomic<int64_t> close_ordered{0};  // capture the daemon told us to close
std::mutex print_mutex;

void say(const std::string& line) {
  std::lock_guard lock(print_mutex);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void stream_window(fleetscope::agent_link::ControlLoop& loop,
                   const fleetscope::agent_link::Order& order, const Options& options) {
  using namespace fleetscope;
  agent_link::WindowClosed closed;
  closed.capture_id = order.capture_id;
  closed.dropped_records = 0;
  closed.collector_overhead_ns = 1000;
  if (options.cupti_busy) {
    closed.error = std::string(
        "CUPTI is in use by another profiler in this process "
        "(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)");
    loop.window_closed(closed);
    say("window capture=" + std::to_string(order.capture_id) + " rows=0");
    return;
  }
  agent_link::BatchBuilder builder(order.capture_id, static_cast<size_t>(options.batch_rows));
  store::GpuInfo gpu;
  gpu.id = 0;
  char text[FLEETSCOPE_STAND_IN_GPU_TEXT_SIZE];
  fleetscope_stand_in_gpu_name(0, text, sizeof text);
  gpu.name = text;
  fleetscope_stand_in_gpu_uuid(0, text, sizeof text);
  gpu.uuid = text;
  gpu.totalMemory = int64_t{80} << 30;  // what the stand-in NVML reports
  builder.add_gpu(gpu);
  const int64_t base = 1'700'000'000'000'000'000 + static_cast<int64_t>(getpid()) * 1'000'000'000;
  int batches = 0;
  int64_t sent = 0, dropped = 0;
  auto send = [&] {
    auto batch = builder.take();
    size_t rows = batch.rows;
    if (loop.push(batch))
      sent += static_cast<int64_t>(rows);
    else
      dropped += static_cast<int64_t>(rows);
    if (++batches == options.crash_after_batches) {
      // What the daemon acknowledged as committed when the job dies: the test checks these
      // batches are in the database.
      say("crashing after " + std::to_string(batches) +
          " batches acked=" + std::to_string(loop.committed_sequence()));
      ::kill(getpid(), SIGKILL);
    }
  };
  for (int i = 0; i < options.kernels; ++i) {
    store::Kernel k;
    if (options.step_ns > 0) {
      store::Iteration step;
      step.globalPid = store::global_pid(getpid());
      step.step = i;
      step.start = base + int64_t{i} * options.step_ns;
      step.end = step.start + options.step_ns;
      builder.add(step);
      if (builder.full()) send();
      k.start = step.start;
      k.end = k.start + options.busy_ns;
    } else {
      k.start = base + int64_t{i} * 10'000;
      k.end = k.start + 6'000;
    }
    k.deviceId = 0;
    k.streamId = 7;
    k.correlationId = i + 1;
    k.globalPid = store::global_pid(getpid());
    k.demangledName = i % 2 ? "void gemm_kernel<float>(float*, int)" : "elementwise_add";
    k.gridX = 128, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    builder.add(k);
    if (builder.full()) send();
  }
  if (!builder.empty()) send();
  // Like the agent, the window stays open for its duration (or until the daemon closes it).
  if (order.duration_ms) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(*order.duration_ms);
    while (std::chrono::steady_clock::now() < end && close_ordered != order.capture_id &&
           !stop_requested)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  closed.dropped_records = dropped;
  loop.window_closed(closed);
  say("window capture=" + std::to_string(order.capture_id) + " rows=" + std::to_string(sent));
}

int run_agent(const Options& options) {
  using namespace fleetscope;
  agent_link::LinkOptions link;
  link.socket_path = options.socket;
  link.poll_timeout_ms = 500;
  link.reconnect_ms = 100;
  std::vector<std::thread> windows;
  std::mutex windows_mutex;
  agent_link::ControlLoop* loop_ptr = nullptr;
  agent_link::ControlLoop::Callbacks callbacks;
  callbacks.on_registered = [](int64_t id) {
    say("registered pid=" + std::to_string(getpid()) + " agent=" + std::to_string(id));
  };
  callbacks.on_order = [&](const agent_link::Order& order) {
    if (order.kind == agent_link::Order::close_window) close_ordered = order.capture_id;
    if (order.kind != agent_link::Order::open_window) return;
    // The window streams on its own thread, as the agent's flush path would: the control
    // thread goes back to polling at once.
    std::lock_guard lock(windows_mutex);
    windows.emplace_back([&, order] { stream_window(*loop_ptr, order, options); });
  };
  agent_link::ControlLoop loop(link, agent_link::read_process_facts(), callbacks);
  loop_ptr = &loop;
  loop.start();
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.lifetime_ms);
  while (!stop_requested && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard lock(windows_mutex);
    for (auto& t : windows) t.join();
  }
  loop.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (arg == "--socket")
      options.socket = next();
    else if (arg == "--children")
      options.children = std::atoi(next().c_str());
    else if (arg == "--kernels")
      options.kernels = std::atoi(next().c_str());
    else if (arg == "--batch-rows")
      options.batch_rows = std::atoi(next().c_str());
    else if (arg == "--crash-after-batches")
      options.crash_after_batches = std::atoi(next().c_str());
    else if (arg == "--cupti-busy")
      options.cupti_busy = true;
    else if (arg == "--lifetime-ms")
      options.lifetime_ms = std::atoi(next().c_str());
    else if (arg == "--step-us")
      options.step_ns = std::atoll(next().c_str()) * 1000;
    else if (arg == "--busy-us")
      options.busy_ns = std::atoll(next().c_str()) * 1000;
    else {
      std::fprintf(stderr, "test_agent: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (options.socket.empty()) {
    std::fprintf(stderr, "test_agent: --socket PATH is required\n");
    return 2;
  }
  signal(SIGTERM, [](int) { stop_requested = true; });
  std::vector<pid_t> children;
  for (int c = 0; c < options.children; ++c) {
    pid_t child = fork();
    if (child == 0) {
      children.clear();
      options.children = 0;
      break;
    }
    if (child > 0) children.push_back(child);
  }
  int rc = run_agent(options);
  for (pid_t child : children) {
    ::kill(child, SIGTERM);
    waitpid(child, nullptr, 0);
  }
  return rc;
}
