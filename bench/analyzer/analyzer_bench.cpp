// Full analyzer rule set on a synthetic capture of FLEETSCOPE_BENCH_EVENTS GPU events (default
// 10,000,000; as many runtime calls again), built straight into the columnar arrays (see
// synthetic_capture.h). References measured in the same run on the same arrays:
//   - OneScanReference: one pass summing end - start over every GPU event (what `nsys analyze`
//     style summing costs; the floor for any analysis that touches each event once);
//   - SortStartsReference: std::sort of a copy of the 10M start times.
// Report: FullRuleSet time / each reference time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>
#include "fleetscope/analyzer/allocator_tuning.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/rules.h"
#include "synthetic_capture.h"

namespace {

using namespace fleetscope::analyzer;

// As the `fleetscope` analysis commands run (allocator_tuning.h).
const bool kAllocatorTuned = [] {
  keep_freed_memory_for_reuse();
  return true;
}();

size_t event_count() {
  const char* env = std::getenv("FLEETSCOPE_BENCH_EVENTS");
  return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : 10'000'000;
}

const CaptureData& capture() {
  static const CaptureData data = bench::synthetic_capture(event_count());
  return data;
}

void FullRuleSet(benchmark::State& state) {
  const CaptureData& data = capture();
  size_t findings = 0, rules = 0, not_evaluated = 0;
  for (auto _ : state) {
    auto result = analyze_capture(data);
    findings = result.findings.size();
    rules = result.rules.size();
    not_evaluated = result.not_evaluated().size();
    benchmark::DoNotOptimize(result.findings.data());
  }
  state.counters["gpu_events"] = static_cast<double>(data.gpu.size());
  state.counters["runtime_calls"] = static_cast<double>(data.runtime.size());
  state.counters["cpu_ops"] = static_cast<double>(data.cpu_ops.size());
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["rules"] = static_cast<double>(rules);
  state.counters["not_evaluated"] = static_cast<double>(not_evaluated);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(data.gpu.size()));
}

// Every metric of docs/analyzer.md (what `analyze --format json` adds to the findings).
void AllMetrics(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) benchmark::DoNotOptimize(metrics_json(data).size());
}

void TemporalBreakdownOnly(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) benchmark::DoNotOptimize(temporal_breakdown(data).size());
}

void IdleTimeBreakdownOnly(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) benchmark::DoNotOptimize(idle_time_breakdown(data).size());
}

void LaunchStatisticsOnly(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) benchmark::DoNotOptimize(launch_statistics(data).launches.size());
}

void Finalize(benchmark::State& state) {
  // Sorting check, per-device/stream indexes, correlation join, busy unions.
  for (auto _ : state) {
    state.PauseTiming();
    CaptureData copy = capture();
    state.ResumeTiming();
    copy.finalize();
    benchmark::DoNotOptimize(copy.busy_by_device.size());
  }
}

void OneScanReference(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) {
    int64_t sum = 0;
    for (size_t i = 0; i < data.gpu.size(); ++i) sum += data.gpu.end[i] - data.gpu.start[i];
    benchmark::DoNotOptimize(sum);
  }
}

void SortStartsReference(benchmark::State& state) {
  const CaptureData& data = capture();
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<int64_t> starts = data.gpu.start;
    std::reverse(starts.begin(), starts.end());
    state.ResumeTiming();
    std::sort(starts.begin(), starts.end());
    benchmark::DoNotOptimize(starts.data());
  }
}

BENCHMARK(OneScanReference)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(SortStartsReference)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(FullRuleSet)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(AllMetrics)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(TemporalBreakdownOnly)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(IdleTimeBreakdownOnly)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(LaunchStatisticsOnly)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(Finalize)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace

// One rule at a time, to see which rules the full set's time goes to.
const bool kPerRuleRegistered = [] {
  for (const auto& rule : RuleRegistry::builtin().rules()) {
    const std::string id = rule->id();
    benchmark::RegisterBenchmark(
        ("PerRule/" + id).c_str(),
        [id](benchmark::State& state) {
          AnalyzeOptions options;
          options.rules = {id};
          for (auto _ : state)
            benchmark::DoNotOptimize(analyze_capture(capture(), options).findings.size());
        })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  return true;
}();

BENCHMARK_MAIN();
