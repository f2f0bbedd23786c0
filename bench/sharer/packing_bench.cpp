// Simulator speed on the Alibaba 2023 pod list (7,064 GPU pods on 1,213 nodes), best-fit lane
// placement against exclusive placement (the reference) in the same run, and the Tiresias 60-job
// replay under SRTF against exclusive FIFO.

#include <benchmark/benchmark.h>

#include "fleetscope/sharer/fleet_packing.h"
#include "fleetscope/sharer/simulator.h"

namespace fleetscope::sharer {
namespace {

const std::string kJobs = std::string(FLEETSCOPE_SHARED_DATA) + "/jobs/";

const std::vector<Pod>& pods() {
  static const auto loaded = load_alibaba_pods(kJobs + "alibaba2023_openb_pod_list_default.csv");
  return loaded;
}
const std::vector<GpuNode>& nodes() {
  static const auto loaded = load_alibaba_nodes(kJobs + "alibaba2023_openb_node_list_gpu_node.csv");
  return loaded;
}

void AlibabaReplay(benchmark::State& state, PackingStrategy strategy, PackingOptions options) {
  const auto& fleet = options.grow_node_gpus > 0 ? std::vector<GpuNode>{} : nodes();
  for (auto _ : state) {
    auto result = simulate_packing(pods(), fleet, strategy, options);
    benchmark::DoNotOptimize(result);
    state.counters["gpus_peak"] = result.gpus_used_peak;
  }
}
BENCHMARK_CAPTURE(AlibabaReplay, Exclusive, PackingStrategy::kExclusive, PackingOptions{})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(AlibabaReplay, BestFitStatic, PackingStrategy::kBestFit, PackingOptions{})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(AlibabaReplay, AllResidentUnboundedExclusive, PackingStrategy::kExclusive,
                  PackingOptions{true, 8})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(AlibabaReplay, AllResidentUnboundedBestFitStatic, PackingStrategy::kBestFit,
                  PackingOptions{true, 8})
    ->Unit(benchmark::kMillisecond);

void Tiresias(benchmark::State& state, const char* policy_name) {
  static const auto profiles = load_salus_profiles(kJobs + "salus_workloads.csv");
  static const auto jobs = load_tiresias_jobs(kJobs + "tiresias_60_job.csv", profiles);
  const auto policy = make_policy(policy_name);
  SimConfig config;
  config.gpus = 8;
  for (auto _ : state) {
    auto result = simulate(jobs, *policy, config);
    state.counters["events"] = static_cast<double>(result.events);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK_CAPTURE(Tiresias, Fifo, "fifo")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Tiresias, Srtf, "srtf")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetscope::sharer
