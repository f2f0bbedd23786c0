// What the agent costs the application thread while a trace window is open and its writer is
// busy: p50/p99 of an NVTX push/pop pair (every 50th range a step, which goes to the control
// thread) and of a CUDA launch, while another application thread launches KERNELS kernels (1M by
// default: 2M rows for the writer). The stand-in CUPTI (tests/support/stand_in_cupti) plays CUPTI:
// with the agent it writes the activity records into the agent's buffers and runs its callbacks.
//
// The reference is a floor: the same program in the same run with the agent absent and the app
// itself the cheapest CUPTI client of the same records (same activity kinds into 4 MiB buffers,
// NVTX callbacks on, records discarded: stand_in_app "floor"). So the stand-in does identical work
// under its locks in both runs, and the difference is the agent's own cost. (The earlier reference,
// no client at all, was *slower* than the agent at p50: with nothing enabled the busy thread's
// launches are cheaper, so it contends more often on the stand-in's global mutex.) The bare run
// is printed for information. Median over REPEATS runs of each.
//
// usage: bench_agent_hot_path [PAIRS=200000] [KERNELS=1000000] [REPEATS=3]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::map<std::string, double> run_once(const std::string& variant, const std::string& pairs,
                                       const std::string& kernels, const fs::path& dir) {
  fs::path out = dir / "out.txt";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    setenv("FLEETSCOPE_CUPTI_PATH", FLEETSCOPE_STAND_IN_CUPTI, 1);
    setenv("FLEETSCOPE_OUTPUT", (dir / "bench-%p.db").c_str(), 1);
    // A window that opens at the first step and stays open: NVTX callbacks are live.
    setenv("FLEETSCOPE_ITERATIONS", "100000000", 1);
    if (!freopen(out.c_str(), "w", stdout)) _exit(126);
    execl(FLEETSCOPE_STAND_IN_APP, FLEETSCOPE_STAND_IN_APP,
          variant == "agent" ? FLEETSCOPE_AGENT_SO : variant.c_str(), FLEETSCOPE_STAND_IN_CUPTI,
          "latency", pairs.c_str(), kernels.c_str(), nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  std::map<std::string, double> values;
  std::ifstream in(out);
  for (std::string word; in >> word;)
    if (auto eq = word.find('='); eq != std::string::npos)
      values[word.substr(0, eq)] = std::atof(word.c_str() + eq + 1);
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".db") fs::remove(entry.path());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::fprintf(stderr, "run %s failed (status %d)\n", variant.c_str(), status);
  return values;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string pairs = argc > 1 ? argv[1] : "200000";
  std::string kernels = argc > 2 ? argv[2] : "1000000";
  int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  fs::path dir = fs::temp_directory_path() / ("bench-agent-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const char* keys[] = {"nvtx_p50_ns", "nvtx_p99_ns", "launch_p50_ns", "launch_p99_ns"};
  std::map<std::string, std::vector<double>> with, floor_ref, bare;
  std::vector<double> behind;
  for (int r = 0; r < repeats; ++r) {
    auto a = run_once("agent", pairs, kernels, dir);
    auto f = run_once("floor", pairs, kernels, dir);
    auto b = run_once("none", pairs, kernels, dir);
    for (const char* k : keys) {
      with[k].push_back(a[k]);
      floor_ref[k].push_back(f[k]);
      bare[k].push_back(b[k]);
    }
    // -1: the trace could not even be read (the busy writer held its lock past the reader's
    // timeout).
    if (a["committed_when_measured"] >= 0)
      behind.push_back(a["kernels_launched"] - a["committed_when_measured"]);
  }
  fs::remove_all(dir);
  std::printf(
      "agent hot path: %s NVTX pairs and launches while another thread launches %s "
      "kernels; median of %d runs\n"
      "reference: the same program with the agent absent and a do-nothing CUPTI client of the "
      "same records (floor)\n",
      pairs.c_str(), kernels.c_str(), repeats);
  std::printf("%-14s %14s %14s %14s %9s %14s\n", "metric", "with agent ns", "floor ns",
              "agent adds ns", "ratio", "no client ns");
  for (const char* k : keys) {
    double a = median(with[k]), f = median(floor_ref[k]), b = median(bare[k]);
    std::printf("%-14s %14.0f %14.0f %+14.0f %8.2fx %14.0f\n", k, a, f, a - f, f > 0 ? a / f : 0.0,
                b);
  }
  if (behind.empty())
    std::printf("writer busy: the trace was locked by the writer when the measurement ended\n");
  else
    std::printf("kernels not yet committed when the measurement ended (writer busy): %.0f\n",
                median(behind));
  return 0;
}
