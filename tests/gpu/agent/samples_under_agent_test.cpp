// Each sample traced by `fleetscope run`: the trace must hold exactly the kernels, copies and
// memsets the sample reports having launched, no dropped records, and timestamps inside the
// capture window.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "fleetscope/store/reader.h"

namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// Why GPU tests cannot run here, or "" when they can.
std::string no_gpu_reason() {
  if (!fs::exists("/dev/nvidiactl")) return "no NVIDIA device (/dev/nvidiactl missing)";
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return "no CUDA driver (libcuda.so.1 cannot be loaded)";
  dlclose(driver);
  return "";
}

struct TracedRun {
  int exit_code = -1;
  std::string out, err;
};

TracedRun run_traced(const std::vector<std::string>& fleetscope_args) {
  fs::path dir = fs::temp_directory_path();
  fs::path out = dir / ("gpu-test-" + std::to_string(getpid()) + ".out");
  fs::path err = dir / ("gpu-test-" + std::to_string(getpid()) + ".err");
  std::string command = "'" + env_or("FLEETSCOPE_CLI_PATH", FLEETSCOPE_CLI_DEFAULT) + "'";
  for (const auto& a : fleetscope_args) command += " '" + a + "'";
  command += " >'" + out.string() + "' 2>'" + err.string() + "'";
  int status = std::system(command.c_str());
  TracedRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::stringstream o, e;
  o << std::ifstream(out).rdbuf();
  e << std::ifstream(err).rdbuf();
  r.out = o.str();
  r.err = e.str();
  fs::remove(out);
  fs::remove(err);
  return r;
}

// "sample=NAME iterations=I kernels=K min_kernels=M memcpys=C memsets=S"
std::map<std::string, long> launched(const std::string& out) {
  std::map<std::string, long> fields;
  std::smatch m;
  std::regex line(
      R"(sample=\S+ iterations=(-?\d+) kernels=(-?\d+) min_kernels=(-?\d+) memcpys=(-?\d+) memsets=(-?\d+))");
  if (std::regex_search(out, m, line)) {
    fields["iterations"] = std::stol(m[1]);
    fields["kernels"] = std::stol(m[2]);
    fields["min_kernels"] = std::stol(m[3]);
    fields["memcpys"] = std::stol(m[4]);
    fields["memsets"] = std::stol(m[5]);
  }
  return fields;
}

class SampleUnderAgent : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleUnderAgent, CapturesExactlyWhatTheSampleLaunched) {
  if (std::string why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  const std::string sample = GetParam();
  fs::path db = fs::temp_directory_path() /
                ("fleetscope-gpu-test-" + sample + "-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  fs::path binary = fs::path(env_or("FLEETSCOPE_SAMPLES_DIR", FLEETSCOPE_SAMPLES_DEFAULT)) / sample;
  TracedRun r = run_traced({"run", "-o", db.string(), "--", binary.string(), "--iterations", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto expected = launched(r.out);
  ASSERT_FALSE(expected.empty()) << "sample printed no summary line:\n" << r.out;
  ASSERT_TRUE(fs::exists(db)) << r.err;

  fleetscope::store::Reader reader(db.string());
  std::map<std::string, int64_t> counts;
  for (const auto& c : reader.counts()) counts[c.table] = c.rows;
  if (expected["kernels"] >= 0)
    EXPECT_EQ(counts["CUPTI_ACTIVITY_KIND_KERNEL"], expected["kernels"]);
  else
    EXPECT_GE(counts["CUPTI_ACTIVITY_KIND_KERNEL"], expected["min_kernels"]);
  EXPECT_EQ(counts["CUPTI_ACTIVITY_KIND_MEMCPY"], expected["memcpys"]);
  EXPECT_EQ(counts["CUPTI_ACTIVITY_KIND_MEMSET"], expected["memsets"]);
  EXPECT_GE(counts["iterations"], expected["iterations"]) << "NVTX step ranges missing";

  auto captures = reader.captures();
  ASSERT_FALSE(captures.empty());
  for (const auto& capture : captures) {
    EXPECT_EQ(capture.dropped_records, 0);
    ASSERT_TRUE(capture.start_ns && capture.end_ns);
    EXPECT_LE(*capture.start_ns, *capture.end_ns);
    fleetscope::store::EventFilter filter;
    filter.captureId = capture.id;
    for (const auto& k : reader.kernels(filter)) {
      EXPECT_LE(k.start, k.end);
      EXPECT_GE(k.start, *capture.start_ns);
      EXPECT_LE(k.end, *capture.end_ns);
      EXPECT_GT(k.start, 1'500'000'000'000'000'000LL);  // CLOCK_REALTIME ns, after 2017
    }
  }
  auto gpus = reader.gpus();
  ASSERT_FALSE(gpus.empty()) << "TARGET_INFO_GPU is empty";
  EXPECT_GT(gpus[0].smCount.value_or(0), 0);
  EXPECT_GT(gpus[0].totalMemory.value_or(0), 0);
  fs::remove(db);
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleUnderAgent,
                         ::testing::Values("clean_gemm", "launch_bound", "sync_every_kernel",
                                           "pageable_memcpy", "host_bound", "few_blocks",
                                           "consolidation", "memory_hog"));

TEST(IterationWindow, TracesTheRequestedSteps) {
  if (std::string why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  // A file of this process's own: two builds' suites may run at once on one machine.
  fs::path db = fs::temp_directory_path() /
                ("fleetscope-gpu-test-iterations-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  fs::path binary =
      fs::path(env_or("FLEETSCOPE_SAMPLES_DIR", FLEETSCOPE_SAMPLES_DEFAULT)) / "launch_bound";
  TracedRun r = run_traced(
      {"run", "--iterations", "3", "-o", db.string(), "--", binary.string(), "--iterations", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fleetscope::store::Reader reader(db.string());
  std::map<std::string, int64_t> counts;
  for (const auto& c : reader.counts()) counts[c.table] = c.rows;
  // 2000 kernels per step; the window closes on the control thread right after step 3 ends.
  EXPECT_GE(counts["CUPTI_ACTIVITY_KIND_KERNEL"], 3 * 2000);
  EXPECT_LT(counts["CUPTI_ACTIVITY_KIND_KERNEL"], 10 * 2000);
  fs::remove(db);
}

}  // namespace
