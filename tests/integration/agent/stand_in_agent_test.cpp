// The agent driven through its real dlopen path by the stand-in CUPTI (libcupti.so.13 fabricating
// CUDA 13 activity records): each test runs fleetscope_stand_in_app in its own directory, as an
// operator would run a job, and checks the trace it leaves.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fleetscope/store/reader.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
using fleetscope::test_support::TempDir;

const std::string kAgent = FLEETSCOPE_AGENT_SO;
const std::string kApp = FLEETSCOPE_STAND_IN_APP;
const std::string kStandIn = FLEETSCOPE_STAND_IN_CUPTI;

struct AppRun {
  std::string out, err;
  int exit_code = -1;                         // when it exited
  int signal = 0;                             // when a signal ended it
  std::map<std::string, std::string> values;  // key=value pairs printed on stdout
  int64_t value(const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? -1 : std::stoll(it->second);
  }
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the app in `dir` with the given extra environment and the agent's defaults for tests.
AppRun run_app(const TempDir& dir, std::vector<std::string> env,
               const std::vector<std::string>& args, const std::string& agent = kAgent) {
  env.push_back("FLEETSCOPE_CUPTI_PATH=" + kStandIn);
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.path().c_str()) != 0) _exit(126);
    for (const char* name : {"FLEETSCOPE_OUTPUT", "FLEETSCOPE_PART_DIR", "FLEETSCOPE_TRACE",
                             "FLEETSCOPE_ITERATIONS", "FLEETSCOPE_DURATION_MS"})
      unsetenv(name);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    freopen((dir.path() / "stdout").c_str(), "w", stdout);
    freopen((dir.path() / "stderr").c_str(), "w", stderr);
    std::vector<std::string> argv_text = {kApp, agent, kStandIn};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(kApp.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  AppRun r;
  r.out = slurp(dir.path() / "stdout");
  r.err = slurp(dir.path() / "stderr");
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    for (std::string word; words >> word;)
      if (auto eq = word.find('='); eq != std::string::npos && word.rfind("reply", 0) != 0)
        r.values[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return r;
}

std::vector<fs::path> files(const TempDir& dir, const std::string& extension) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir.path()))
    if (entry.path().extension() == extension) found.push_back(entry.path());
  return found;
}

bool only_file_beside_logs(const TempDir& dir, const fs::path& trace) {
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    std::string name = entry.path().filename().string();
    if (name == "stdout" || name == "stderr" || entry.path() == trace) continue;
    ADD_FAILURE() << "unexpected file left beside the trace: " << name;
    return false;
  }
  return true;
}

std::string integrity(const fs::path& db_path) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::string result = "cannot open";
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW)
    result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return result;
}

int64_t kernels(const fleetscope::store::Reader& reader, int64_t capture = 0) {
  fleetscope::store::EventFilter filter;
  if (capture) filter.captureId = capture;
  return static_cast<int64_t>(reader.kernels(filter).size());
}

// The app runs three duration windows, then a step window (NVTX callbacks on).
AppRun run_four_windows(TempDir& dir, const std::string& detach) {
  std::string fifo = dir.file("control"), reply = dir.file("replies");
  EXPECT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<std::string> env = {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"),
                                  "FLEETSCOPE_TRACE=0", "FLEETSCOPE_CONTROL_FIFO=" + fifo,
                                  "FLEETSCOPE_CONTROL_REPLY=" + reply};
  if (!detach.empty()) env.push_back("FLEETSCOPE_DETACH=" + detach);
  return run_app(dir, env, {"windows", "3", "40"});
}

// FLEETSCOPE_DETACH=never keeps CUPTI subscribed from the first window on, every domain and
// activity kind off between windows; the next window reuses the subscriber.
TEST(StandInAgent, DetachNeverKeepsOneSubscriber) {
  TempDir dir;
  AppRun r = run_four_windows(dir, "never");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.value("finalize_calls"), 0) << r.out;
  EXPECT_NE(r.out.find("window=3 finalize_calls=0 subscribers=1 kinds=0"), std::string::npos)
      << r.out;
  EXPECT_EQ(files(dir, ".db").size(), 1u);
}

TEST(StandInAgent, RepeatedWindowsInOneProcessEachAttachAndDetach) {
  TempDir dir;
  AppRun r = run_four_windows(dir, "");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  // Each window detached CUPTI through an API-exit callback, the way NVIDIA documents.
  EXPECT_EQ(r.value("finalize_calls"), 4) << r.out;
  EXPECT_EQ(r.value("finalize_in_api_exit"), 4) << r.out;
  EXPECT_NE(r.out.find("window=3 finalize_calls=3 subscribers=0 kinds=0"), std::string::npos)
      << r.out;
  // Closing with no window open is refused with a one-line reason.
  EXPECT_NE(r.out.find("reply=refused: no-window-open"), std::string::npos) << r.out;

  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(integrity(traces[0]), "ok");
  fleetscope::store::Reader reader(traces[0].string());
  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 4u);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(kernels(reader, captures[w].id), 40) << "window " << w + 1;
    EXPECT_EQ(captures[w].note.value_or(""), "") << "window " << w + 1;
    EXPECT_EQ(captures[w].dropped_records, 0);
  }
  // The iteration window opened at step 1 and closed at the end of the second step that began
  // after tracing started: steps 1 to 3 are traced, 3 kernels each (the app waited for the open
  // before step 1's kernels and for the close before step 4).
  EXPECT_EQ(kernels(reader, captures[3].id), 9);
  // What the agent guarantees: exactly one row for each step it counted (2 and 3), the last one
  // included although CUPTI recorded that step's END marker only after the window had closed (the
  // app made it 30 ms late). Step 1 began before tracing started; it has a row only when CUPTI
  // happened to record its START after the agent enabled the MARKER kind: the stand-in writes it
  // right after the push's callback, which wakes the control thread that enables it, and CUPTI
  // would race the same way. No other row.
  auto rows = reader.iterations(captures[3].id);
  ASSERT_TRUE(rows.size() == 2u || rows.size() == 3u) << rows.size() << "\n" << r.out;
  auto within_step = [&](const fleetscope::store::Iteration& row, int step) {
    std::string s = "step" + std::to_string(step);
    return row.start >= r.value(s + "_from") && row.start < row.end &&
           row.end <= r.value(s + "_to");
  };
  size_t second = rows.size() - 2;
  if (rows.size() == 3u) {
    EXPECT_TRUE(within_step(rows[0], 1)) << r.out;
  }
  EXPECT_TRUE(within_step(rows[second], 2))
      << rows[second].start << ".." << rows[second].end << "\n"
      << r.out;
  EXPECT_TRUE(within_step(rows[second + 1], 3))
      << rows[second + 1].start << ".." << rows[second + 1].end << "\n"
      << r.out;
  // cudaGetDevice is filtered like Kineto does; the launches are kept.
  fleetscope::store::EventFilter filter;
  filter.captureId = captures[0].id;
  auto calls = reader.runtime_calls(filter);
  EXPECT_EQ(calls.size(), 40u);
  for (const auto& call : calls) EXPECT_EQ(reader.string(call.nameId), "cudaLaunchKernel");
}

class SignalMidWindow : public ::testing::TestWithParam<std::string> {};

TEST_P(SignalMidWindow, KeepsEveryFlushedRowAndEndsLikeWithoutTheAgent) {
  TempDir dir;
  AppRun r =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"), "FLEETSCOPE_BUFFER_SIZE_KB=64"},
              {"signal", GetParam(), "3000", "150"});
  int expected = GetParam() == "ABRT" ? SIGABRT : GetParam() == "INT" ? SIGINT : SIGTERM;
  EXPECT_EQ(r.signal, expected) << "exit " << r.exit_code << "\n" << r.out << r.err;
  EXPECT_EQ(r.out.find("still alive"), std::string::npos);
  int64_t committed = r.value("committed");
  ASSERT_GT(committed, 0) << r.out << r.err;

  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_TRUE(only_file_beside_logs(dir, traces[0]));  // no *.tmp-*, no journal
  EXPECT_EQ(integrity(traces[0]), "ok");
  fleetscope::store::Reader reader(traces[0].string());
  EXPECT_GE(kernels(reader), committed);
  // The handler's forced flush also saved the buffer that was in flight.
  EXPECT_EQ(kernels(reader), r.value("launched"));
  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 1u);
  EXPECT_EQ(
      captures[0].note.value_or("").rfind("partial: the process received SIG" + GetParam(), 0), 0u)
      << captures[0].note.value_or("");
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalMidWindow, ::testing::Values("TERM", "INT", "ABRT"));

// CUPTI's own thread takes a full buffer off its queue and hands it over a moment later; a flush
// on the control thread in between finds that queue empty and returns first. The stand-in makes
// the moment 50 ms (STAND_IN_CUPTI_DELIVERY_DELAY_MS), so a signal lands in it: the window still
// keeps every row, because the flush waits for the buffers CUPTI held before it. (Seen once under
// load before the wait: 2894 of 3150 kernels, one 64 KiB buffer short.)
TEST(StandInAgent, ASignalWhileCuptiHandsOverABufferLosesNoRow) {
  TempDir dir;
  AppRun r = run_app(dir,
                     {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"),
                      "FLEETSCOPE_BUFFER_SIZE_KB=64", "STAND_IN_CUPTI_DELIVERY_DELAY_MS=50"},
                     {"signal", "TERM", "3000", "150"});
  EXPECT_EQ(r.signal, SIGTERM) << "exit " << r.exit_code << "\n" << r.out << r.err;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u) << r.out << r.err;
  fleetscope::store::Reader reader(traces[0].string());
  EXPECT_EQ(kernels(reader), r.value("launched")) << r.out << r.err;
}

TEST(StandInAgent, SignalGoesOnToTheJobsOwnHandler) {
  TempDir dir;
  AppRun r =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"), "FLEETSCOPE_BUFFER_SIZE_KB=64"},
              {"signal", "TERM", "1000", "10", "own"});
  EXPECT_EQ(r.exit_code, 42) << r.out << r.err;  // the job's handler decided the exit
  EXPECT_NE(r.out.find("job handler ran for signal 15"), std::string::npos) << r.out;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(integrity(traces[0]), "ok");
  fleetscope::store::Reader reader(traces[0].string());
  EXPECT_EQ(kernels(reader), 1010);
}

TEST(StandInAgent, ForkWithoutExecLeavesTheChildAloneAndTheParentTracing) {
  TempDir dir;
  AppRun r = run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db")}, {"fork", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.value("child_exit"), 7) << r.out;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u) << "the child must not write a trace";
  EXPECT_EQ(traces[0].filename().string().find(std::to_string(r.value("child_pid"))),
            std::string::npos);
  EXPECT_EQ(integrity(traces[0]), "ok");
  fleetscope::store::Reader reader(traces[0].string());
  EXPECT_EQ(kernels(reader), 400);
  EXPECT_EQ(reader.captures().at(0).note.value_or(""), "");
}

TEST(StandInAgent, BufferCapDropsAndCountsInsteadOfGrowing) {
  TempDir dir;
  AppRun r = run_app(dir,
                     {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"),
                      "FLEETSCOPE_BUFFER_SIZE_KB=64", "FLEETSCOPE_BUFFER_POOL_MB=1"},
                     {"hold", "20000"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int64_t dropped = r.value("records_dropped");
  ASSERT_GT(dropped, 0) << r.out;
  // 1 MiB of 64 KiB buffers: CUPTI was given 16 buffers and no more while it kept them.
  EXPECT_EQ(r.value("buffers_requested") - r.value("buffers_declined"), 16) << r.out;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  fleetscope::store::Reader reader(traces[0].string());
  auto capture = reader.captures().at(0);
  EXPECT_EQ(capture.dropped_records, dropped);
  EXPECT_NE(capture.note.value_or("").find("buffer pool was full"), std::string::npos)
      << capture.note.value_or("");
  EXPECT_GT(kernels(reader), 0);
  EXPECT_LT(kernels(reader), 20000);
}

TEST(StandInAgent, IncompleteRecordsAreDroppedAndCounted) {
  TempDir dir;
  AppRun r =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db")}, {"incomplete", "50", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  fleetscope::store::Reader reader(traces[0].string());
  auto rows = reader.kernels({});
  EXPECT_EQ(rows.size(), 50u);
  for (const auto& k : rows) EXPECT_GT(k.end, k.start);
  auto capture = reader.captures().at(0);
  EXPECT_EQ(capture.dropped_records, 2);
  EXPECT_NE(capture.note.value_or("").find("2 incomplete records dropped"), std::string::npos)
      << capture.note.value_or("");
}

TEST(StandInAgent, AnotherSubscriberMeansRefusalAndItsTracingIsUntouched) {
  TempDir dir;
  AppRun r =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db")}, {"other-subscriber", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("[fleetscope-agent] not tracing: another-cupti-subscriber: ", 0), 0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.value("other_tool_kernels"), 30) << r.out;
  EXPECT_EQ(r.value("finalize_calls"), 0);
  EXPECT_EQ(r.value("subscribers"), 1);
  EXPECT_EQ(r.value("kinds"), 1);
  EXPECT_TRUE(files(dir, ".db").empty());
}

TEST(StandInAgent, NvtxAndLaunchStayFastWhileTheWriterIsBusy) {
  TempDir dir;
  AppRun r = run_app(
      dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace-%p.db"), "FLEETSCOPE_ITERATIONS=1000000"},
      {"latency", "20000", "150000"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The bug this guards against blocked push/pop for 141 ms to 2.9 s behind the writer. The bound
  // is loose on purpose (a shared 2-core CI machine); bench/agent measures the real figures.
  EXPECT_LT(r.value("nvtx_p99_ns"), 1'000'000) << r.out;
  EXPECT_LT(r.value("launch_p99_ns"), 1'000'000) << r.out;
  // The writer was busy: when the measurement ended, it had not committed everything yet.
  EXPECT_LT(r.value("committed_when_measured"), r.value("kernels_launched")) << r.out;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 1u);
  fleetscope::store::Reader reader(traces[0].string());
  auto capture = reader.captures().at(0);
  EXPECT_EQ(kernels(reader) + capture.dropped_records, r.value("kernels_launched"));
}

TEST(StandInAgent, OutputWithoutPidGetsThePidAndNeverOverwrites) {
  TempDir dir;
  AppRun first =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace.db")}, {"incomplete", "5", "0"});
  AppRun second =
      run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("trace.db")}, {"incomplete", "7", "0"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto traces = files(dir, ".db");
  ASSERT_EQ(traces.size(), 2u);
  int64_t total = 0;
  for (const auto& t : traces) {
    EXPECT_EQ(t.filename().string().rfind("trace-", 0), 0u) << t;
    total += kernels(fleetscope::store::Reader(t.string()));
  }
  EXPECT_EQ(total, 12);
}

// The store throws inside the agent (no such directory): the exception unwinds through the
// agent's own _dl_find_object (glibc_compat.cpp), is caught there, and the job goes on.
TEST(StandInAgent, UnwritableOutputIsOneLineAndTheJobGoesOn) {
  TempDir dir;
  AppRun r = run_app(dir, {"FLEETSCOPE_OUTPUT=" + dir.file("missing/trace-%p.db")},
                     {"incomplete", "5", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.rfind("[fleetscope-agent] not tracing: cannot-start-tracing: cannot create ", 0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.value("kinds"), 0);  // nothing left enabled
}

#ifdef FLEETSCOPE_CLI
// `fleetscope run` end to end: the launcher injects the agent, the job is stopped by SIGTERM, the
// launcher passes the status on and the partial trace is readable by `fleetscope info`.
TEST(StandInAgent, FleetscopeRunKeepsTheTraceOfAJobStoppedBySigterm) {
  TempDir dir;
  std::string out = dir.file("run.db");
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.path().c_str()) != 0) _exit(126);
    setenv("FLEETSCOPE_AGENT_PATH", kAgent.c_str(), 1);
    setenv("FLEETSCOPE_CUPTI_PATH", kStandIn.c_str(), 1);
    setenv("FLEETSCOPE_BUFFER_SIZE_KB", "64", 1);
    freopen((dir.path() / "stdout").c_str(), "w", stdout);
    freopen((dir.path() / "stderr").c_str(), "w", stderr);
    execl(FLEETSCOPE_CLI, FLEETSCOPE_CLI, "run", "-o", out.c_str(), "--", kApp.c_str(), "env",
          kStandIn.c_str(), "signal", "TERM", "2000", "40", nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::string err = slurp(dir.path() / "stderr");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << err;
  ASSERT_TRUE(fs::exists(out)) << err;
  EXPECT_EQ(integrity(out), "ok");
  fleetscope::store::Reader reader(out);
  EXPECT_EQ(kernels(reader), 2040);
  EXPECT_EQ(reader.captures().at(0).note.value_or("").rfind("partial: ", 0), 0u);
  std::string info = std::string(FLEETSCOPE_CLI) + " info '" + out + "' > /dev/null 2>&1";
  EXPECT_EQ(std::system(info.c_str()), 0);
}
#endif

TEST(StandInAgent, IdleAgentLoadsNoCupti) {
  TempDir dir;
  // No window requested: the stand-in (loaded by the app) sees no subscriber and no activity.
  AppRun r = run_app(dir, {}, {"incomplete", "5", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.value("subscribers"), 0);
  EXPECT_EQ(r.value("kinds"), 0);
  EXPECT_EQ(r.value("buffers_requested"), 0);
  EXPECT_TRUE(files(dir, ".db").empty());
}

}  // namespace
