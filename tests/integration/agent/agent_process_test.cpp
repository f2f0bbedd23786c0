#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Outcome {
  std::string out, err;
  int exit_code = -1;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `argv` with `env_overrides` ("NAME=value", or "NAME=" to unset) through /usr/bin/env.
Outcome run(const std::vector<std::string>& env_overrides, const std::vector<std::string>& argv) {
  fs::path dir = fs::temp_directory_path() / ("fleetscope-agent-it-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string command = "cd '" + dir.string() + "' && env";
  for (const std::string& e : env_overrides) {
    if (e.back() == '=')
      command += " -u " + e.substr(0, e.size() - 1);
    else
      command += " '" + e + "'";
  }
  for (const std::string& a : argv) command += " '" + a + "'";
  command += " >'" + (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  int status = std::system(command.c_str());
  Outcome o;
  o.out = slurp(dir / "out");
  o.err = slurp(dir / "err");
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  fs::remove(dir / "out");
  fs::remove(dir / "err");
  return o;
}

std::string capture_stdout(const std::string& command) {
  std::string text;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return text;
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) text.append(buffer.data(), n);
  pclose(pipe);
  return text;
}

int count_lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

const std::string kAgent = FLEETSCOPE_AGENT_SO;
const std::string kHost = FLEETSCOPE_AGENT_HOST;

TEST(AgentInProcess, IdleAgentIsSilentAndKeepsExitCode) {
  Outcome o = run({"FLEETSCOPE_OUTPUT=", "FLEETSCOPE_PART_DIR="}, {kHost, kAgent, "7"});
  EXPECT_EQ(o.exit_code, 7);
  EXPECT_EQ(o.out, "host continues (InitializeInjection returned 1)\n");
  EXPECT_EQ(o.err, "");
}

TEST(AgentInProcess, MissingCuptiGivesOneLineAndKeepsExitCode) {
  Outcome o = run({"FLEETSCOPE_OUTPUT=trace.db", "FLEETSCOPE_CUPTI_PATH=/nonexistent/libcupti.so",
                   "LD_LIBRARY_PATH=/nonexistent"},
                  {kHost, kAgent, "5"});
  EXPECT_EQ(o.exit_code, 5);
  EXPECT_EQ(o.out, "host continues (InitializeInjection returned 1)\n");
  EXPECT_EQ(count_lines(o.err), 1) << o.err;
  EXPECT_EQ(
      o.err.rfind("[fleetscope-agent] not tracing: cupti-unavailable: cannot load libcupti", 0), 0u)
      << o.err;
}

TEST(AgentInProcess, RealCuptiWithoutDriverGivesAtMostOneLineAndNoFile) {
  std::string cupti = FLEETSCOPE_CUPTI_LIB_PATH;
  if (cupti.empty()) GTEST_SKIP() << "no libcupti in the CUDA toolkit";
  if (fs::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    GTEST_SKIP() << "a CUDA driver is installed; this test covers machines without one";
  fs::path out =
      fs::temp_directory_path() / ("fleetscope-agent-nodriver-" + std::to_string(getpid()) + ".db");
  Outcome o = run({"FLEETSCOPE_OUTPUT=" + out.string(), "FLEETSCOPE_CUPTI_PATH=" + cupti},
                  {kHost, kAgent, "3"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.out, "host continues (InitializeInjection returned 1)\n");
  EXPECT_LE(count_lines(o.err), 1) << o.err;
  if (!o.err.empty()) {
    EXPECT_EQ(o.err.rfind("[fleetscope-agent] ", 0), 0u) << o.err;
  }
  // Whatever the agent managed, it never leaves a temporary file behind.
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
    EXPECT_EQ(entry.path().filename().string().find(out.filename().string() + ".tmp-"),
              std::string::npos);
  fs::remove(out);
}

// Every kind of window, with the real libcupti and no driver: the host never notices.
class AgentWindowWithoutDriver : public ::testing::TestWithParam<std::string> {};

TEST_P(AgentWindowWithoutDriver, HostKeepsOutputAndExitCode) {
  if (fs::exists("/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    GTEST_SKIP() << "a CUDA driver is installed; this test covers machines without one";
  fs::path out =
      fs::temp_directory_path() / ("fleetscope-agent-window-" + std::to_string(getpid()) + ".db");
  Outcome o = run({"FLEETSCOPE_OUTPUT=" + out.string(), GetParam()}, {kHost, kAgent, "9"});
  EXPECT_EQ(o.exit_code, 9);
  EXPECT_EQ(o.out, "host continues (InitializeInjection returned 1)\n");
  EXPECT_LE(count_lines(o.err), 1) << o.err;
  if (!o.err.empty()) {
    EXPECT_EQ(o.err.rfind("[fleetscope-agent] ", 0), 0u) << o.err;
  }
  // No trace under any name derived from the output (the agent adds the pid to it).
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
    EXPECT_NE(entry.path().filename().string().rfind(out.stem().string(), 0), 0u) << entry.path();
}

INSTANTIATE_TEST_SUITE_P(Windows, AgentWindowWithoutDriver,
                         ::testing::Values("FLEETSCOPE_ITERATIONS=2", "FLEETSCOPE_DELAY_MS=100",
                                           "FLEETSCOPE_DURATION_MS=50",
                                           "FLEETSCOPE_BUFFER_SIZE_KB=abc",
                                           "FLEETSCOPE_STEP_NAMES=iter#"));

TEST(AgentLibrary, ExportsOnlyTheInjectionEntryPoint) {
  std::string symbols = capture_stdout("nm -D --defined-only '" + kAgent + "'");
  ASSERT_FALSE(symbols.empty());
  std::istringstream lines(symbols);
  std::vector<std::string> names;
  for (std::string line; std::getline(lines, line);)
    names.push_back(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(names, std::vector<std::string>{"InitializeInjection"}) << symbols;
}

// The runtime a sanitizer build links into every shared object (GCC: libasan/libubsan/...;
// clang: libclang_rt.*). Accepted only when this build is one (FLEETSCOPE_SANITIZER_BUILD).
bool is_sanitizer_runtime(const std::string& line) {
  for (const char* runtime : {"[libasan.so", "[libubsan.so", "[liblsan.so", "[libtsan.so",
                              "[libhwasan.so", "[libclang_rt."})
    if (line.find(runtime) != std::string::npos) return true;
  return false;
}

TEST(AgentLibrary, DependsOnNothingButTheCLibrary) {
  std::string dynamic = capture_stdout("readelf -d '" + kAgent + "'");
  ASSERT_NE(dynamic.find("NEEDED"), std::string::npos);
  std::istringstream lines(dynamic);
#ifdef FLEETSCOPE_SANITIZER_BUILD
  constexpr bool sanitizer_build = true;
#else
  constexpr bool sanitizer_build = false;
#endif
  for (std::string line; std::getline(lines, line);) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    bool system_lib = line.find("[libc.so") != std::string::npos ||
                      line.find("[libm.so") != std::string::npos ||
                      line.find("[ld-linux") != std::string::npos ||
                      line.find("[libdl.so") != std::string::npos ||
                      line.find("[libpthread.so") != std::string::npos ||
                      (sanitizer_build && is_sanitizer_runtime(line));
    EXPECT_TRUE(system_lib) << "unexpected dependency: " << line;
    EXPECT_EQ(line.find("cupti"), std::string::npos);
    EXPECT_EQ(line.find("libcuda"), std::string::npos);
  }
}

// The agent must load in containers built on older distributions (RHEL 9: glibc 2.34; Ubuntu
// 22.04: 2.35): no symbol of the library may need a glibc version above 2.34.
TEST(AgentLibrary, NeedsNoGlibcNewerThan2_34) {
  std::string needs = capture_stdout("readelf -V --wide '" + kAgent + "'");
  ASSERT_NE(needs.find("GLIBC_2."), std::string::npos) << needs;
  int highest_minor = 0;
  std::string highest;
  for (size_t at = needs.find("GLIBC_2."); at != std::string::npos;
       at = needs.find("GLIBC_2.", at + 1)) {
    size_t end = needs.find_first_not_of("0123456789.", at + 8);
    std::string version = needs.substr(at, end - at);
    int minor = std::atoi(version.c_str() + 8);
    if (minor > highest_minor) {
      highest_minor = minor;
      highest = version;
    }
  }
  EXPECT_LE(highest_minor, 34) << "the agent needs " << highest << ":\n"
                               << capture_stdout("objdump -T '" + kAgent + "' | grep -E " +
                                                 "'GLIBC_2\\.(3[5-9]|[4-9][0-9])'");
}

#ifdef FLEETSCOPE_SAMPLE
// A real CUDA program (it fails here for lack of a driver) behaves the same with the agent set.
TEST(AgentInProcess, CudaProgramBehavesTheSameWithInjectionSet) {
  Outcome without = run({"CUDA_INJECTION64_PATH="}, {FLEETSCOPE_SAMPLE, "--iterations", "3"});
  Outcome with = run({"CUDA_INJECTION64_PATH=" + kAgent, "FLEETSCOPE_OUTPUT=with-agent.db"},
                     {FLEETSCOPE_SAMPLE, "--iterations", "3"});
  EXPECT_EQ(with.exit_code, without.exit_code);
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(with.err, without.err);
}
#endif

#ifdef FLEETSCOPE_CLI
TEST(FleetscopeRun, PassesOutputAndExitCodeThrough) {
  fs::path out = fs::temp_directory_path() / ("fleetscope-run-" + std::to_string(getpid()) + ".db");
  Outcome o = run({"FLEETSCOPE_AGENT_PATH=" + kAgent}, {FLEETSCOPE_CLI, "run", "-o", out.string(),
                                                        "--", "/bin/sh", "-c", "echo hi; exit 3"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.out.rfind("hi\n", 0), 0u) << o.out;
  EXPECT_NE(o.err.find("no GPU work was captured"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(FleetscopeRun, PassesSignalsThroughAs128PlusSignal) {
  Outcome o = run({"FLEETSCOPE_AGENT_PATH=" + kAgent},
                  {FLEETSCOPE_CLI, "run", "--", "/bin/sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(o.exit_code, 128 + 15);
}

#ifndef __SANITIZE_ADDRESS__
// The job maps the libcupti the launcher found before anything else (LD_PRELOAD, ahead of the
// user's own), and NVTX reports to that same copy: on an H100 a libcupti loaded later killed every
// traced process at exit (docs/agent.md, "On a GPU"). A missing file is only a loader warning.
TEST(FleetscopeRun, JobMapsTheNamedCuptiFirst) {
  const std::string cupti = "/nonexistent/libcupti.so.13";
  Outcome o = run({"NVTX_INJECTION64_PATH=", "FLEETSCOPE_AGENT_PATH=" + kAgent,
                   "FLEETSCOPE_CUPTI_PATH=" + cupti, "LD_PRELOAD=/nonexistent/users-own.so"},
                  {FLEETSCOPE_CLI, "run", "--", "/bin/sh", "-c",
                   "echo \"preload=$LD_PRELOAD nvtx=$NVTX_INJECTION64_PATH\""});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("preload=" + cupti + " /nonexistent/users-own.so nvtx=" + cupti),
            std::string::npos)
      << o.out;
}
#endif

// The output is checked before the job runs: an existing trace is kept unless --force (it was
// overwritten silently when the job ended), a folder that does not exist is named at once (it
// failed only after the whole job had run), and the job does not run in either case.
TEST(FleetscopeRun, AnExistingOutputIsKeptWithoutForceAndCheckedBeforeTheJobRuns) {
  const fs::path dir =
      fs::temp_directory_path() / ("fleetscope-run-out-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path existing = dir / "old.db";
  std::ofstream(existing) << "old trace";
  const std::vector<std::string> job = {"--", "/bin/sh", "-c", "echo ran; exit 3"};
  auto run_with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {FLEETSCOPE_CLI, "run"});
    args.insert(args.end(), job.begin(), job.end());
    return run({"FLEETSCOPE_AGENT_PATH=" + kAgent}, args);
  };
  Outcome kept = run_with({"-o", existing.string()});
  EXPECT_EQ(kept.exit_code, 1) << kept.err;
  EXPECT_EQ(kept.out, "");  // the job did not run
  EXPECT_NE(
      kept.err.find("error: " + existing.string() + ": already exists (use --force to replace it)"),
      std::string::npos)
      << kept.err;
  EXPECT_EQ(slurp(existing), "old trace");
  const fs::path nowhere = dir / "missing" / "x.db";
  Outcome missing = run_with({"-o", nowhere.string()});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("error: cannot write " + nowhere.string() + ": folder "),
            std::string::npos)
      << missing.err;
  Outcome forced = run_with({"-o", existing.string(), "--force"});
  EXPECT_EQ(forced.exit_code, 3) << forced.err;
  EXPECT_EQ(forced.out.rfind("ran\n", 0), 0u) << forced.out;
  fs::remove_all(dir);
}

TEST(FleetscopeRun, UsageErrorsExitTwo) {
  Outcome o =
      run({}, {FLEETSCOPE_CLI, "run", "--duration-ms", "5", "--iterations", "2", "--", "true"});
  EXPECT_EQ(o.exit_code, 2);
  Outcome missing = run({}, {FLEETSCOPE_CLI, "run"});
  EXPECT_EQ(missing.exit_code, 2);
}
#endif

}  // namespace
