// fleetscoped benchmarks, each against a named reference measured in the same run:
//   rtt N              status() round trips over the API socket (p50/p99) vs a raw Unix-socket
//                      round trip of the same number of bytes (an echo thread, no Thrift, no work)
//   stream ROWS        kernel rows streamed by an agent link client into the host database (rows/s,
//                      until windowClosed answers, i.e. every batch committed; a few batches in
//                      flight, group-committed) vs store::Writer's insert loop of the same rows
//                      into a fresh database
//   idle AGENTS SECS   the fleetscoped process: CPU % and RSS with AGENTS registered agents (one
//                      process each, polling) vs the same daemon with none, sampling 2 stand-in
//                      GPUs
//   contended AGENTS N [--rate ROWS_PER_S|max]
//                      status() latency and trace window open/close latency (N of each) while
//                      AGENTS agent processes stream kernel rows into open windows, offering
//                      ROWS_PER_S together (default 1,000,000; max: as fast as the daemon takes
//                      them), vs the same calls with no agent streaming; the offered, pushed and
//                      committed rates vs store::Writer's insert loop with the host database's
//                      settings, measured before and after in the same run, and the CPU time each
//                      writer thread spends per row (what it would commit on a core of its own)
//
//   build/release/bench/daemon/bench_daemon rtt 20000
//   build/release/bench/daemon/bench_daemon stream 2000000
//   build/release/bench/daemon/bench_daemon idle 64 20
//   build/release/bench/daemon/bench_daemon contended 8 40
//   build/release/bench/daemon/bench_daemon contended 8 40 --rate max
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "FleetscopeHost.h"
#include "fleetscope/agent_link/batch_builder.h"
#include "fleetscope/agent_link/link_client.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/daemon/thrift_server.h"
#include "fleetscope/daemon/trace_control.h"
#include "fleetscope/rpc/transport.h"
#include "fleetscope/store/writer.h"

using namespace fleetscope;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string temp_dir() {
  std::string pattern = "/tmp/fleetscope-bench-XXXXXX";
  return mkdtemp(pattern.data());
}

struct InProcessDaemon {
  std::string dir = temp_dir();
  std::ostringstream log;
  std::unique_ptr<daemon::DaemonCore> core;
  std::unique_ptr<daemon::ThriftServers> servers;
  daemon::DaemonConfig config;
  InProcessDaemon() {
    config.database = dir + "/host.db";
    config.socket = dir + "/api.sock";
    config.agent_socket = dir + "/agent.sock";
    config.nvml_library = dir + "/no-nvml.so";
    core = std::make_unique<daemon::DaemonCore>(config, log);
    servers = std::make_unique<daemon::ThriftServers>(*core, config);
    servers->start();
  }
  ~InProcessDaemon() {
    core->registry().close();
    core->traces().stop();
    servers->stop();
    core->shutdown();
    std::system(("rm -rf " + dir).c_str());
  }
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

int rtt(int n) {
  InProcessDaemon d;
  auto transport = rpc::make_client_transport(d.config.socket, {}, 10'000);
  rpc::FleetscopeHostClient client(rpc::make_protocol(transport, {}));
  transport->open();
  rpc::DaemonStatus status;
  for (int i = 0; i < 200; ++i) client.status(status);
  std::vector<double> status_us;
  for (int i = 0; i < n; ++i) {
    auto t = Clock::now();
    client.status(status);
    status_us.push_back(seconds_since(t) * 1e6);
  }
  // The reference: the same request and reply sizes echoed over a Unix socket pair by a thread.
  size_t request_bytes = 4 + 4 + 6 + 4 + 1, reply_bytes = 0;
  {
    auto buffer = std::make_shared<apache::thrift::transport::TMemoryBuffer>();
    apache::thrift::protocol::TBinaryProtocol protocol(buffer);
    status.write(&protocol);
    reply_bytes = buffer->available_read() + 4 + 4 + 6 + 4 + 3 + 1 + 4;
  }
  int fds[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
  std::thread echo([&] {
    std::vector<char> in(request_bytes), out(reply_bytes, 'x');
    for (int i = 0; i < n + 200; ++i) {
      size_t got = 0;
      while (got < in.size())
        got += static_cast<size_t>(read(fds[1], in.data() + got, in.size() - got));
      (void)!write(fds[1], out.data(), out.size());
    }
  });
  std::vector<char> request(request_bytes, 'r'), reply(reply_bytes);
  std::vector<double> raw_us;
  for (int i = 0; i < n + 200; ++i) {
    auto t = Clock::now();
    (void)!write(fds[0], request.data(), request.size());
    size_t got = 0;
    while (got < reply.size())
      got += static_cast<size_t>(read(fds[0], reply.data() + got, reply.size() - got));
    if (i >= 200) raw_us.push_back(seconds_since(t) * 1e6);
  }
  echo.join();
  std::printf("status() round trip, %d calls, reply %zu bytes:\n", n, reply_bytes);
  std::printf("  %-44s p50 %8.1f us  p99 %8.1f us\n", "raw Unix-socket echo (reference)",
              percentile(raw_us, 0.5), percentile(raw_us, 0.99));
  std::printf("  %-44s p50 %8.1f us  p99 %8.1f us  (p99 %.1fx the reference)\n",
              "fleetscoped status() over Thrift", percentile(status_us, 0.5),
              percentile(status_us, 0.99), percentile(status_us, 0.99) / percentile(raw_us, 0.99));
  return 0;
}

std::vector<std::string> name_pool() {
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("void at::native::elementwise_kernel<128, 4, at::native::op_" +
                    std::to_string(i) + "<float> >(int, at::native::op_" + std::to_string(i) +
                    "<float>)");
  return names;
}

store::Kernel kernel(int64_t i, const std::vector<std::string>& names) {
  store::Kernel k;
  k.start = 1'700'000'000'000'000'000 + i * 2000;
  k.end = k.start + 1500;
  k.deviceId = static_cast<int32_t>(i % 8);
  k.streamId = 7;
  k.correlationId = i;
  k.globalPid = store::global_pid(getpid());
  k.demangledName = names[static_cast<size_t>(i % 200)];
  k.gridX = 128, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  return k;
}

struct ProcessUsage {
  double cpu_seconds = 0;
  long rss_kib = 0, hwm_kib = 0;
};

// User + system CPU seconds in a /proc/.../stat file (of a process or of one of its threads).
double stat_cpu_seconds(const std::string& path) {
  std::ifstream stat(path);
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.rfind(')') == std::string::npos) return 0;  // gone
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 13; ++i) fields >> skip;
  fields >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

ProcessUsage usage_of(pid_t pid) {
  ProcessUsage u;
  u.cpu_seconds = stat_cpu_seconds("/proc/" + std::to_string(pid) + "/stat");
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) u.rss_kib = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) u.hwm_kib = std::stol(line.substr(6));
  }
  return u;
}

// CPU seconds (user + system) of this process' threads named `name` (store::Writer names its
// thread after WriterOptions::writer_name), live ones only.
double thread_cpu_seconds(const std::string& name) {
  double total = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    total += stat_cpu_seconds(task.path() / "stat");
  }
  return total;
}

// The reference of `stream` and `contended`: store::Writer's own insert loop (one thread, no
// agent, no decoding) of `rows` kernel rows into a fresh database, in rows/s until every row is
// committed. With `host`: the host database's settings (WAL, synchronous=NORMAL, the indexes it
// keeps live (HostStore::apply_live_indexes: none on the event tables since schema 7's row
// ranges), 16,384-row transactions) and the rows spread over `host->captures`
// captures in runs of a batch, as the agents' batches reach the daemon's writer.
// Also the writer thread's CPU time per row: what a core of its own would take.
struct HostLike {
  int captures = 8;
};
struct LoopRate {
  double rows_per_second = 0;
  double writer_cpu_us_per_row = 0;
};
LoopRate insert_loop_rate(int64_t rows, const std::vector<std::string>& names,
                          std::optional<HostLike> host) {
  std::string dir = temp_dir();
  LoopRate rate;
  {
    store::WriterOptions options;
    options.writer_name = "ref-writer";
    options.keep_wal_after_finish = true;
    options.build_indexes = false;
    store::Database db = store::Database::create(dir + "/ref.db");
    if (host) {
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = NORMAL");
      daemon::HostStore::apply_live_indexes(db);
      options.batch_rows = 16384;
    }
    auto t = Clock::now();
    store::Writer writer(std::move(db), options);
    for (int64_t i = 0; i < rows; ++i) {
      auto k = kernel(i, names);
      k.captureId = host ? 1 + (i / 16384) % host->captures : 1;
      writer.add(std::move(k));
    }
    writer.flush();
    rate.rows_per_second = static_cast<double>(rows) / seconds_since(t);
    rate.writer_cpu_us_per_row = thread_cpu_seconds("ref-writer") * 1e6 / static_cast<double>(rows);
    writer.finish();
  }
  std::system(("rm -rf " + dir).c_str());
  return rate;
}

int stream(int64_t rows) {
  auto names = name_pool();
  // Reference: the store's own insert loop into a fresh live database.
  const double reference_rate = insert_loop_rate(rows, names, {}).rows_per_second;
  // The agent link: register, get a window ordered, stream, close.
  InProcessDaemon d;
  std::atomic<int64_t> capture{0};
  agent_link::LinkOptions options;
  options.socket_path = d.config.agent_socket;
  agent_link::ControlLoop::Callbacks callbacks;
  callbacks.on_order = [&](const agent_link::Order& order) {
    if (order.kind == agent_link::Order::open_window) capture = order.capture_id;
  };
  agent_link::ProcessFacts facts;
  facts.pid = getpid();
  facts.workflow = {"bench", "env"};
  agent_link::ControlLoop loop(options, facts, callbacks);
  loop.start();
  while (!loop.registered()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  daemon::RpcHandler api(*d.core, daemon::Caller{1, 0});
  rpc::TraceRequest request;
  request.__set_pid(getpid());
  request.__set_duration_ms(3'600'000);
  api.start_trace(request);
  while (capture == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  agent_link::BatchBuilder builder(capture, static_cast<size_t>(loop.max_batch_rows()));
  auto t = Clock::now();
  for (int64_t i = 0; i < rows; ++i) {
    builder.add(kernel(i, names));
    if (builder.full() && !loop.push(builder.take())) {
      std::fprintf(stderr, "push failed: %s\n", loop.last_error().c_str());
      return 1;
    }
  }
  if (!builder.empty() && !loop.push(builder.take())) return 1;
  // windowClosed answers once every batch is committed: the clock stops there, not at the last
  // push.
  agent_link::WindowClosed closed;
  closed.capture_id = capture;
  if (!loop.window_closed(closed)) {
    std::fprintf(stderr, "windowClosed failed: %s\n", loop.last_error().c_str());
    return 1;
  }
  double link_rate = static_cast<double>(rows) / seconds_since(t);
  loop.stop();
  std::printf("%lld kernel rows into the host database, batches of %d rows:\n",
              static_cast<long long>(rows), loop.max_batch_rows());
  std::printf("  %-52s %10.0f rows/s\n", "store::Writer insert loop, live database (reference)",
              reference_rate);
  std::printf("  %-52s %10.0f rows/s  (%.2fx the reference)\n",
              "agent link -> fleetscoped -> store::Writer", link_rate, link_rate / reference_rate);
  return 0;
}

int idle(int agents, int seconds) {
  std::string dir = temp_dir();
  pid_t daemon_pid = fork();
  if (daemon_pid == 0) {
    execl(FLEETSCOPED, FLEETSCOPED, "--database", (dir + "/host.db").c_str(), "--socket",
          (dir + "/api.sock").c_str(), "--agent-socket", (dir + "/agent.sock").c_str(),
          "--nvml-library", NVML_STANDIN, "--prometheus-port", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto measure = [&](const char* what) {
    ProcessUsage before = usage_of(daemon_pid);
    auto t = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    ProcessUsage after = usage_of(daemon_pid);
    double cpu_pct = 100.0 * (after.cpu_seconds - before.cpu_seconds) / seconds_since(t);
    std::printf("  %-40s CPU %5.2f %%  RSS %6.1f MiB  peak RSS %6.1f MiB\n", what, cpu_pct,
                after.rss_kib / 1024.0, after.hwm_kib / 1024.0);
    return cpu_pct;
  };
  std::printf("fleetscoped idle over %d s, sampling 2 stand-in GPUs every second:\n", seconds);
  double alone = measure("no agents (reference)");
  std::vector<pid_t> children;
  for (int a = 0; a < agents; ++a) {
    pid_t child = fork();
    if (child == 0) {
      agent_link::LinkOptions options;
      options.socket_path = dir + "/agent.sock";
      agent_link::ControlLoop loop(options, agent_link::read_process_facts(), {});
      loop.start();
      pause();
      _exit(0);
    }
    children.push_back(child);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  double with_agents = measure((std::to_string(agents) + " registered agents (1 s polls)").c_str());
  std::printf("  CPU with agents - without: %.2f percentage points\n", with_agents - alone);
  for (pid_t child : children) kill(child, SIGKILL);
  for (pid_t child : children) waitpid(child, nullptr, 0);
  kill(daemon_pid, SIGTERM);
  waitpid(daemon_pid, nullptr, 0);
  std::system(("rm -rf " + dir).c_str());
  return 0;
}

// What the agent processes of `contended` tell the bench: the rows each has pushed (taken by the
// daemon), in memory shared across fork().
struct AgentCounters {
  std::atomic<int64_t> pushed[64];
};

// One agent process for `contended`: registers, and on each OPEN order either closes the window
// at once (probe) or streams kernel rows, batch after batch, until the CLOSE order (streamer).
// A streamer offers `rows_per_second` (0: as fast as the daemon takes them): it builds a batch,
// then pushes it when its last row is due on the window's schedule (open + rows / rate). push()
// returns once the daemon has taken the batch, which it does only while the agent has fewer than
// kUncommittedBatchesPerAgent batches uncommitted (the bounded window), so a daemon that cannot
// keep up holds the agent behind its schedule and the committed rate falls below the offered one.
[[noreturn]] void contended_agent(const std::string& socket, bool streamer, int index,
                                  double rows_per_second, AgentCounters* counters) {
  auto names = name_pool();
  agent_link::LinkOptions options;
  options.socket_path = socket;
  options.poll_timeout_ms = 200;
  agent_link::ProcessFacts facts = agent_link::read_process_facts();
  facts.workflow = {(streamer ? "stream-" : "probe-") + std::to_string(index), "env"};
  std::atomic<int64_t> open{0}, close{0};
  agent_link::ControlLoop::Callbacks callbacks;
  callbacks.on_order = [&](const agent_link::Order& order) {
    if (order.kind == agent_link::Order::open_window) open = order.capture_id;
    if (order.kind == agent_link::Order::close_window) close = order.capture_id;
  };
  agent_link::ControlLoop loop(options, facts, callbacks);
  loop.start();
  int64_t served = 0, i = 0;
  while (true) {
    const int64_t capture = open.load();
    if (capture == 0 || capture == served) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    served = capture;
    if (streamer) {
      agent_link::BatchBuilder builder(capture, static_cast<size_t>(loop.max_batch_rows()));
      const auto opened = Clock::now();
      int64_t offered = 0;  // rows of this window built so far
      while (close.load() != capture) {
        builder.add(kernel(i++, names));
        ++offered;
        if (!builder.full()) continue;
        if (rows_per_second > 0) {
          const auto due =
              opened + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           static_cast<double>(offered) / rows_per_second));
          // In slices, so a CLOSE order is not kept waiting for a slow schedule.
          while (close.load() != capture && Clock::now() < due)
            std::this_thread::sleep_until(
                std::min(due, Clock::now() + std::chrono::milliseconds(5)));
          if (close.load() == capture) break;
        }
        const size_t rows = builder.rows();
        if (!loop.push(builder.take())) break;
        counters->pushed[index].fetch_add(static_cast<int64_t>(rows));
      }
    }
    agent_link::WindowClosed closed;
    closed.capture_id = capture;
    loop.window_closed(closed);
  }
}

// rows_per_second: the aggregate rate the streaming agents offer (each agents' share of it);
// 0: each streams as fast as the daemon takes its batches.
int contended(int agents, int n, double rows_per_second) {
  if (agents < 1 || agents > 63) {
    std::fprintf(stderr, "contended: AGENTS must be in 1..63, got %d\n", agents);
    return 2;
  }
  const auto names = name_pool();
  constexpr int64_t kReferenceRows = 1'000'000;
  const LoopRate reference_before = insert_loop_rate(kReferenceRows, names, HostLike{agents});
  InProcessDaemon d;
  void* shared = mmap(nullptr, sizeof(AgentCounters), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  auto* counters = new (shared) AgentCounters{};
  std::vector<pid_t> children;
  auto spawn = [&](bool streamer, int index) {
    pid_t child = fork();
    if (child == 0)
      contended_agent(d.config.agent_socket, streamer, index, rows_per_second / agents, counters);
    children.push_back(child);
    return child;
  };
  const pid_t probe = spawn(false, 0);
  auto transport = rpc::make_client_transport(d.config.socket, {}, 60'000);
  rpc::FleetscopeHostClient client(rpc::make_protocol(transport, {}));
  transport->open();
  auto wait_agents = [&](size_t count) {
    rpc::DaemonStatus status;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      client.status(status);
    } while (status.agents.size() < count);
  };
  wait_agents(1);
  struct Figures {
    std::vector<double> status_us, open_us, close_us;
  };
  auto measure = [&]() {
    Figures f;
    rpc::DaemonStatus status;
    for (int i = 0; i < n; ++i) {
      auto t = Clock::now();
      client.status(status);
      f.status_us.push_back(seconds_since(t) * 1e6);
      rpc::TraceRequest request;
      request.__set_pid(probe);
      request.__set_duration_ms(3'600'000);
      rpc::TraceStarted started;
      t = Clock::now();
      client.startTrace(started, request);
      f.open_us.push_back(seconds_since(t) * 1e6);
      t = Clock::now();
      rpc::TraceProgress progress;
      do client.traceProgress(progress, started.capture_id, 60'000);
      while (!progress.done);
      f.close_us.push_back(seconds_since(t) * 1e6);
    }
    return f;
  };
  measure();  // warm-up
  const Figures idle = measure();
  for (int a = 1; a <= agents; ++a) spawn(true, a);
  wait_agents(static_cast<size_t>(agents) + 1);
  std::vector<int64_t> streams;
  for (size_t c = 1; c < children.size(); ++c) {
    rpc::TraceRequest request;
    request.__set_pid(children[c]);
    request.__set_duration_ms(3'600'000);
    rpc::TraceStarted started;
    client.startTrace(started, request);
    streams.push_back(started.capture_id);
  }
  // Committed (traceProgress of the streams' windows) and pushed (taken by the daemon, the agents'
  // counters) rows so far.
  struct Rows {
    int64_t committed = 0, pushed = 0;
    double writer_cpu = 0;  // seconds, the bulk writer's thread
    Clock::time_point at;
  };
  auto rows_now = [&] {
    Rows r;
    for (int64_t id : streams) {
      rpc::TraceProgress progress;
      client.traceProgress(progress, id, 0);
      r.committed += progress.records;
    }
    for (int a = 1; a <= agents; ++a) r.pushed += counters->pushed[a].load();
    r.writer_cpu = thread_cpu_seconds("fleetscoped");  // HostStore's bulk store::Writer
    r.at = Clock::now();
    return r;
  };
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the streams reach their pace
  // The streams' rates over 3 s, then the calls while they go on (rates over those too).
  const Rows start = rows_now();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const Rows quiet = rows_now();
  const Figures loaded = measure();
  const Rows end = rows_now();
  for (pid_t child : children) kill(child, SIGKILL);
  for (pid_t child : children) waitpid(child, nullptr, 0);
  const LoopRate reference_after = insert_loop_rate(kReferenceRows, names, HostLike{agents});
  const double reference = (reference_before.rows_per_second + reference_after.rows_per_second) / 2;
  std::printf(
      "store::Writer insert loop, %lld kernel rows, host database settings and indexes, "
      "%d captures (reference): %.0f rows/s before, %.0f rows/s after the agents; its writer "
      "thread %.2f / %.2f us CPU per row\n",
      static_cast<long long>(kReferenceRows), agents, reference_before.rows_per_second,
      reference_after.rows_per_second, reference_before.writer_cpu_us_per_row,
      reference_after.writer_cpu_us_per_row);
  if (rows_per_second > 0)
    std::printf(
        "%d agent processes offering %.0f rows/s together (%.0f each, paced, %d-row batches, at "
        "most %d uncommitted per agent):\n",
        agents, rows_per_second, rows_per_second / agents, daemon::kMaxBatchRows,
        daemon::kUncommittedBatchesPerAgent);
  else
    std::printf(
        "%d agent processes streaming as fast as the daemon takes their batches (%d-row batches, "
        "at most %d uncommitted per agent):\n",
        agents, daemon::kMaxBatchRows, daemon::kUncommittedBatchesPerAgent);
  auto rates = [&](const char* what, const Rows& from, const Rows& to) {
    const double seconds = std::chrono::duration<double>(to.at - from.at).count();
    const double pushed = static_cast<double>(to.pushed - from.pushed) / seconds;
    const double committed = static_cast<double>(to.committed - from.committed) / seconds;
    std::printf("  %-26s %5.1f s: offered %9s rows/s, pushed %9.0f rows/s, committed %9.0f rows/s",
                what, seconds,
                rows_per_second > 0 ? std::to_string(static_cast<int64_t>(rows_per_second)).c_str()
                                    : "(max)",
                pushed, committed);
    if (rows_per_second > 0) std::printf(" (%.2fx offered", committed / rows_per_second);
    std::printf("%s%.2fx the insert loop)\n", rows_per_second > 0 ? ", " : " (",
                committed / reference);
    const double cpu_per_row = (to.writer_cpu - from.writer_cpu) * 1e6 /
                               static_cast<double>(to.committed - from.committed);
    std::printf(
        "  %-26s bulk writer thread %.2f us CPU per committed row (%.0f rows/s on a core of its "
        "own)\n",
        "", cpu_per_row, 1e6 / cpu_per_row);
  };
  rates("before the calls", start, quiet);
  rates("during the calls", quiet, end);
  std::printf("  latency, %d calls each:\n", n);
  auto row = [&](const char* what, const std::vector<double>& reference,
                 const std::vector<double>& value) {
    std::printf(
        "  %-22s idle (reference) p50 %9.1f us p99 %9.1f us | loaded p50 %9.1f us p99 "
        "%9.1f us | p50 %.1fx, p99 %.1fx the reference\n",
        what, percentile(reference, 0.5), percentile(reference, 0.99), percentile(value, 0.5),
        percentile(value, 0.99), percentile(value, 0.5) / percentile(reference, 0.5),
        percentile(value, 0.99) / percentile(reference, 0.99));
  };
  row("status()", idle.status_us, loaded.status_us);
  row("window open", idle.open_us, loaded.open_us);
  row("window close+analyze", idle.close_us, loaded.close_us);
  std::fflush(stdout);  // before the daemon's shutdown (its index build on the streamed rows)
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "rtt") return rtt(argc > 2 ? std::atoi(argv[2]) : 20000);
  if (mode == "stream") return stream(argc > 2 ? std::atoll(argv[2]) : 2'000'000);
  if (mode == "idle")
    return idle(argc > 2 ? std::atoi(argv[2]) : 64, argc > 3 ? std::atoi(argv[3]) : 20);
  if (mode == "contended") {
    // contended AGENTS N [--rate ROWS_PER_S | --rate max]
    double rate = 1'000'000;
    if (argc > 5 && std::string(argv[4]) == "--rate") {
      rate = std::string(argv[5]) == "max" ? 0 : std::atof(argv[5]);
      if (rate <= 0 && std::string(argv[5]) != "max") {
        std::fprintf(stderr, "contended: --rate takes rows/s (> 0) or 'max', got '%s'\n", argv[5]);
        return 2;
      }
    } else if (argc > 4) {
      std::fprintf(stderr, "contended: unexpected '%s' (expected --rate ROWS_PER_S|max)\n",
                   argv[4]);
      return 2;
    }
    return contended(argc > 2 ? std::atoi(argv[2]) : 8, argc > 3 ? std::atoi(argv[3]) : 40, rate);
  }
  std::fprintf(stderr,
               "usage: bench_daemon rtt N | stream ROWS | idle AGENTS SECONDS | contended AGENTS "
               "N [--rate ROWS_PER_S|max]\n");
  return 2;
}
