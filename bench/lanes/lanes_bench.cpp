// Cost of lane enforcement on the job's hot paths, each against a named reference in the same run:
//   AllocFree/ThroughLane   cuMemAlloc_v2 + cuMemFree_v2 through libfleetscope_lanes.so (dlsym
//   path,
//                           ledger charge/refund, pointer bookkeeping) on the stand-in libcuda.so.1
//   AllocFree/StandIn       reference: the same two stand-in functions called directly
//   StepBoundary/Alone      fleetscope_step() for a job alone in its gated lane (arbiter running)
//   DriverCall/StandIn      reference: one cheap driver call (an idle cuCtxSynchronize of the
//   stand-in)
// The program re-executes itself with LD_PRELOAD and the lane variables set (the real path a job
// takes), then prints each ratio after Google Benchmark's table.

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fleetscope/lanes/gate_arbiter.h"
#include "fleetscope/lanes/gate_server.h"
#include "fleetscope/lanes/lane_segment.h"
#include "fleetscope/step.h"

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Alloc = CUresult (*)(CUdeviceptr*, size_t);
using Free = CUresult (*)(CUdeviceptr);
using Sync = CUresult (*)();

struct Driver {
  Alloc alloc = nullptr;
  Free free = nullptr;
  Sync sync = nullptr;
};

Driver g_wrapped, g_direct;
std::string g_directory;

void AllocFreeThroughLane(benchmark::State& state) {
  for (auto _ : state) {
    CUdeviceptr pointer = 0;
    g_wrapped.alloc(&pointer, 4096);
    g_wrapped.free(pointer);
  }
}
void AllocFreeStandIn(benchmark::State& state) {
  for (auto _ : state) {
    CUdeviceptr pointer = 0;
    g_direct.alloc(&pointer, 4096);
    g_direct.free(pointer);
  }
}
void StepBoundaryAlone(benchmark::State& state) {
  fleetscope_step();  // the first boundary takes the turn from the arbiter (one round trip)
  for (auto _ : state) fleetscope_step();
}
void DriverCallStandIn(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(g_direct.sync());
}

BENCHMARK(AllocFreeThroughLane)->Name("AllocFree/ThroughLane");
BENCHMARK(AllocFreeStandIn)->Name("AllocFree/StandIn");
BENCHMARK(StepBoundaryAlone)->Name("StepBoundary/Alone");
BENCHMARK(DriverCallStandIn)->Name("DriverCall/StandIn");

// Collects each benchmark's time per iteration, and prints them as the console reporter does.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type == Run::RT_Iteration || run.aggregate_name == "median") {
        times_[run.run_name.function_name] = {run.GetAdjustedRealTime(), run.GetAdjustedCPUTime()};
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void print_ratio(const char* measured, const char* reference) const {
    auto m = times_.find(measured), r = times_.find(reference);
    if (m == times_.end() || r == times_.end() || r->second.wall <= 0 || r->second.cpu <= 0) return;
    std::printf(
        "%-22s wall %8.1f ns cpu %8.1f ns  vs  %-19s wall %8.1f ns cpu %8.1f ns  ratio wall %.2f "
        "cpu %.2f\n",
        measured, m->second.wall, m->second.cpu, reference, r->second.wall, r->second.cpu,
        m->second.wall / r->second.wall, m->second.cpu / r->second.cpu);
  }

 private:
  struct Times {
    double wall = 0;
    double cpu = 0;
  };
  std::map<std::string, Times> times_;
};

int reexec_with_lane(int argc, char** argv) {
  char directory[] = "/tmp/fleetscope-lanes-bench-XXXXXX";
  if (!::mkdtemp(directory)) return 1;
  std::string lane = "bench-" + std::to_string(::getpid());
  ::setenv("LD_PRELOAD", FLEETSCOPE_LANES_LIBRARY, 1);
  // The lane as fleetscoped grants it: its ledger (64 GiB) and grant token made before the job.
  const std::string token = fleetscope::lanes::LaneSegment::new_grant_token();
  std::string error;
  if (!fleetscope::lanes::LaneSegment::open_or_create(
          fleetscope::lanes::LaneSegment::path_for_lane(directory, lane), uint64_t{64} << 30,
          &error, token)) {
    std::fprintf(stderr, "bench_lanes: %s\n", error.c_str());
    return 1;
  }
  ::setenv("FLEETSCOPE_LANE_ID", lane.c_str(), 1);
  ::setenv("FLEETSCOPE_LANE_TOKEN", token.c_str(), 1);
  ::setenv("FLEETSCOPE_LANE_DIR", directory, 1);
  ::setenv("FLEETSCOPE_GATE_SOCKET", (std::string(directory) + "/gate.sock").c_str(), 1);
  ::setenv("FLEETSCOPE_LANES_BENCH_DIR", directory, 1);
  ::execv("/proc/self/exe", argv);
  std::perror("execv /proc/self/exe");
  (void)argc;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const char* directory = std::getenv("FLEETSCOPE_LANES_BENCH_DIR");
  if (!directory) return reexec_with_lane(argc, argv);
  g_directory = directory;

  void* stand_in = dlopen(FLEETSCOPE_STAND_IN_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!stand_in) {
    std::fprintf(stderr, "bench_lanes: %s\n", dlerror());
    return 1;
  }
  // dlsym is interposed: these are the wrappers. The stand-in's own lookup gives the originals.
  g_wrapped.alloc = reinterpret_cast<Alloc>(dlsym(stand_in, "cuMemAlloc_v2"));
  g_wrapped.free = reinterpret_cast<Free>(dlsym(stand_in, "cuMemFree_v2"));
  auto own =
      reinterpret_cast<void* (*)(const char*)>(dlsym(stand_in, "fleetscope_standin_function"));
  if (!g_wrapped.alloc || !g_wrapped.free || !own) return 1;
  g_direct.alloc = reinterpret_cast<Alloc>(own("cuMemAlloc_v2"));
  g_direct.free = reinterpret_cast<Free>(own("cuMemFree_v2"));
  g_direct.sync = reinterpret_cast<Sync>(own("cuCtxSynchronize"));
  if (g_wrapped.alloc == g_direct.alloc) {
    std::fprintf(stderr, "bench_lanes: the interposition library is not loaded\n");
    return 1;
  }

  fleetscope::lanes::GateArbiter arbiter;
  fleetscope::lanes::GateServer server(arbiter, g_directory + "/gate.sock");
  std::string error;
  if (!server.start(&error)) {
    std::fprintf(stderr, "bench_lanes: %s\n", error.c_str());
    return 1;
  }

  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n");
  reporter.print_ratio("AllocFree/ThroughLane", "AllocFree/StandIn");
  reporter.print_ratio("StepBoundary/Alone", "DriverCall/StandIn");
  benchmark::Shutdown();
  server.stop();
  // The ledger file and the folder (the socket went with server.stop(); the mapping outlives the
  // file, so the library's exit handler still finds its ledger).
  ::unlink((g_directory + "/fleetscope-lane-" + std::getenv("FLEETSCOPE_LANE_ID")).c_str());
  ::rmdir(g_directory.c_str());
  return 0;
}
