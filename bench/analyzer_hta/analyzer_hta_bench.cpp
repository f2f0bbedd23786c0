// fleetscope's side of the HTA comparison: per shared trace, the work HTA does for
// `TraceAnalysis(trace_dir)` + `get_temporal_breakdown()` + `get_idle_time_breakdown()`, i.e.
// import the Kineto JSON, load the capture, compute both breakdowns. The user paths:
//   AnalyzeDirect/       analyzer::load_trace_file (what `fleetscope analyze TRACE.json.gz`
//                        does: importer rows straight into a CaptureData, no database) + both
//                        breakdowns;
//   AnalyzeInMemory/     importers::import_to_memory (in-memory database, no file) + load + both
//                        breakdowns: the same CaptureData as AnalyzeDirect, through SQLite;
//   ImportAndBreakdowns/ importers::import_files into a new database file (`fleetscope import`,
//                        atomic, synced, indexed) + load from that file + both breakdowns.
// compare.py times HTA on the same files in the same run and prints the ratios. CPU time is the
// whole process's (MeasureProcessCPUTime), so the store writer's thread counts too, as every HTA
// thread does in Python's time.process_time().
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace {

namespace fs = std::filesystem;

// The traces of tests/data/hta_reference/hta_reference.json that HTA can analyse.
const std::vector<std::string> kTraces = {
    "hta-ns_resolution_trace_rank-0.json.gz",
    "hta-critical_path_alexnet_trace.json.gz",
    "hta-critical_path_simple_add_trace.json.gz",
    "hta-nccl_parser_config_nccl_data.json.gz",
    "hta-timeline_analysis_sampled_rank-0.json.gz",
    "hta-trace_filter_sampled_rank-1.json.gz",
    "hta-triton_example_triton_example.json.gz",
    "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
};

// HTA's two analyses on a loaded capture (the part every path below shares); returns the number
// of GPU events for the benchmark's counter.
int64_t breakdowns(const fleetscope::analyzer::CaptureData& data) {
  auto temporal = fleetscope::analyzer::temporal_breakdown(data);
  auto idle = fleetscope::analyzer::idle_time_breakdown(data);
  benchmark::DoNotOptimize(temporal.data());
  benchmark::DoNotOptimize(idle.data());
  return static_cast<int64_t>(data.gpu.size());
}

void import_and_analyze(benchmark::State& state, const std::string& trace) {
  const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
  const fs::path db = fs::temp_directory_path() / ("fleetscope-hta-bench-" + trace + ".db");
  int64_t gpu_events = 0;
  for (auto _ : state) {
    fleetscope::importers::import_files({input}, db.string(), {}, /*overwrite=*/true);
    fleetscope::store::Reader reader(db.string());
    const auto data = fleetscope::analyzer::load_capture(
        reader, fleetscope::analyzer::resolve_capture_id(reader, std::nullopt));
    gpu_events = breakdowns(data);
  }
  state.counters["gpu_events"] = static_cast<double>(gpu_events);
  std::error_code ignored;
  fs::remove(db, ignored);
}

void analyze_in_memory(benchmark::State& state, const std::string& trace) {
  const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
  int64_t gpu_events = 0;
  for (auto _ : state) {
    auto imported = fleetscope::importers::import_to_memory(input);
    fleetscope::store::Reader reader(std::move(imported.database));
    const auto data = fleetscope::analyzer::load_capture(reader, imported.result.capture_id);
    gpu_events = breakdowns(data);
  }
  state.counters["gpu_events"] = static_cast<double>(gpu_events);
}

void analyze_direct(benchmark::State& state, const std::string& trace) {
  const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
  int64_t gpu_events = 0;
  for (auto _ : state) {
    const auto data = fleetscope::analyzer::load_trace_file(input);
    gpu_events = breakdowns(data);
  }
  state.counters["gpu_events"] = static_cast<double>(gpu_events);
}

// The two halves of the file path above, to see where the time goes.
void import_only(benchmark::State& state, const std::string& trace) {
  const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
  const fs::path db = fs::temp_directory_path() / ("fleetscope-hta-bench-import-" + trace + ".db");
  for (auto _ : state)
    fleetscope::importers::import_files({input}, db.string(), {}, /*overwrite=*/true);
  std::error_code ignored;
  fs::remove(db, ignored);
}

void load_and_breakdowns(benchmark::State& state, const std::string& trace) {
  const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
  const fs::path db = fs::temp_directory_path() / ("fleetscope-hta-bench-load-" + trace + ".db");
  fleetscope::importers::import_files({input}, db.string(), {}, /*overwrite=*/true);
  int64_t gpu_events = 0;
  for (auto _ : state) {
    fleetscope::store::Reader reader(db.string());
    const auto data = fleetscope::analyzer::load_capture(
        reader, fleetscope::analyzer::resolve_capture_id(reader, std::nullopt));
    gpu_events = breakdowns(data);
  }
  state.counters["gpu_events"] = static_cast<double>(gpu_events);
  std::error_code ignored;
  fs::remove(db, ignored);
}

const bool kRegistered = [] {
  for (const auto& trace : kTraces) {
    benchmark::RegisterBenchmark(("AnalyzeDirect/" + trace).c_str(), analyze_direct, trace)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
    benchmark::RegisterBenchmark(("AnalyzeInMemory/" + trace).c_str(), analyze_in_memory, trace)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
    benchmark::RegisterBenchmark(("ImportAndBreakdowns/" + trace).c_str(), import_and_analyze,
                                 trace)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
    benchmark::RegisterBenchmark(("ImportOnly/" + trace).c_str(), import_only, trace)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
    benchmark::RegisterBenchmark(("LoadAndBreakdowns/" + trace).c_str(), load_and_breakdowns, trace)
        ->Unit(benchmark::kMillisecond)
        ->MeasureProcessCPUTime()
        ->UseRealTime();
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
