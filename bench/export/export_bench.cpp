// Export throughput (events/s) on the largest shared Kineto trace, imported once, against two
// references measured in the same run on the same events:
//   - NlohmannDumpReference: nlohmann::json holding the very events we export, dumped to a file
//     (what a DOM-based exporter costs for serialization alone, without reading the database);
//   - FwriteReference: fwrite of the same byte count (the I/O floor).
// Plus a synthetic capture of 1M kernels + 1M launches to show that memory stays flat (peak RSS).
//
//   build/bench/export/export_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"

namespace {

namespace fs = std::filesystem;
using fleetscope::exporter::ChromeExportOptions;
using fleetscope::exporter::ChromeExportStats;
using fleetscope::exporter::export_chrome;

const std::string kTrace =
    std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz";

fs::path scratch() {
  static const fs::path dir = [] {
    fs::path d =
        fs::temp_directory_path() / ("fleetscope-export-bench-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

const std::string& imported_db() {
  static const std::string path = [] {
    const std::string db = (scratch() / "ns_resolution.db").string();
    fleetscope::importers::import_files({kTrace}, db, {}, true);
    return db;
  }();
  return path;
}

// The exported document, parsed back once: the references serialize exactly these events.
const nlohmann::json& exported_document() {
  static const nlohmann::json document = [] {
    fleetscope::store::Reader reader(imported_db());
    const std::string out = (scratch() / "reference.json").string();
    export_chrome(reader, out);
    std::ifstream in(out);
    return nlohmann::json::parse(in);
  }();
  return document;
}

void report(benchmark::State& state, int64_t events, int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * events);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["events"] = static_cast<double>(events);
}

void BM_ExportChrome(benchmark::State& state, bool gzip) {
  fleetscope::store::Reader reader(imported_db());
  const std::string out = (scratch() / (gzip ? "bench.json.gz" : "bench.json")).string();
  ChromeExportStats stats;
  for (auto _ : state) stats = export_chrome(reader, out);
  report(state, stats.events, stats.bytes);
}
BENCHMARK_CAPTURE(BM_ExportChrome, json, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ExportChrome, json_gz, true)->Unit(benchmark::kMillisecond);

void BM_NlohmannDumpReference(benchmark::State& state) {
  const nlohmann::json& document = exported_document();
  const int64_t events = static_cast<int64_t>(document.at("traceEvents").size());
  const std::string out = (scratch() / "nlohmann.json").string();
  int64_t bytes = 0;
  for (auto _ : state) {
    const std::string text = document.dump();
    std::FILE* file = std::fopen(out.c_str(), "wb");
    std::fwrite(text.data(), 1, text.size(), file);
    std::fclose(file);
    bytes = static_cast<int64_t>(text.size());
  }
  report(state, events, bytes);
}
BENCHMARK(BM_NlohmannDumpReference)->Unit(benchmark::kMillisecond);

void BM_FwriteReference(benchmark::State& state) {
  const nlohmann::json& document = exported_document();
  const int64_t events = static_cast<int64_t>(document.at("traceEvents").size());
  const std::string text = document.dump();
  const std::string out = (scratch() / "fwrite.json").string();
  for (auto _ : state) {
    std::FILE* file = std::fopen(out.c_str(), "wb");
    for (size_t offset = 0; offset < text.size(); offset += 1 << 20)
      std::fwrite(text.data() + offset, 1, std::min<size_t>(1 << 20, text.size() - offset), file);
    std::fclose(file);
  }
  report(state, events, static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_FwriteReference)->Unit(benchmark::kMillisecond);

// Resident memory from /proc/self/status ("VmRSS" now, "VmHWM" peak), in MiB.
double status_mib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return 0;
}
// Writing 5 to clear_refs resets the peak (VmHWM) to the current RSS (Linux >= 4.0), so the peak
// read afterwards belongs to the export alone, not to building the database before it.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// 1M kernels each launched by one runtime call: 2M slices + 1M flow pairs = 4M events.
void BM_ExportSyntheticMillion(benchmark::State& state) {
  const std::string db = (scratch() / "synthetic.db").string();
  if (!fs::exists(db)) {
    fleetscope::store::Writer writer(fleetscope::store::Database::create(db));
    fleetscope::store::Capture capture;
    capture.source = "bench";
    const int64_t id = writer.add_capture(capture);
    const int64_t base = 1'700'000'000'000'000'000;
    for (int64_t i = 0; i < 1'000'000; ++i) {
      fleetscope::store::RuntimeCall call;
      call.start = base + i * 2000;
      call.end = call.start + 700;
      call.globalTid = fleetscope::store::global_tid(100, 100);
      call.correlationId = i + 1;
      call.name = "cudaLaunchKernel";
      call.captureId = id;
      writer.add(call);
      fleetscope::store::Kernel kernel;
      kernel.start = call.start + 5000;
      kernel.end = kernel.start + 1500;
      kernel.streamId = 7 + static_cast<int32_t>(i % 4);
      kernel.correlationId = i + 1;
      kernel.demangledName = "kernel_" + std::to_string(i % 500);
      kernel.gridX = kernel.gridY = kernel.gridZ = 1;
      kernel.blockX = 256, kernel.blockY = kernel.blockZ = 1;
      kernel.captureId = id;
      writer.add(kernel);
    }
    writer.finish();
  }
  fleetscope::store::Reader reader(db);
  const std::string out = (scratch() / "synthetic.json").string();
  reset_peak_rss();
  const double rss_before = status_mib("VmRSS");
  ChromeExportStats stats;
  for (auto _ : state) stats = export_chrome(reader, out);
  report(state, stats.events, stats.bytes);
  state.counters["rss_before_MiB"] = rss_before;
  state.counters["peak_rss_during_MiB"] = status_mib("VmHWM");
  state.counters["output_MiB"] = static_cast<double>(stats.bytes) / (1 << 20);
}
BENCHMARK(BM_ExportSyntheticMillion)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(scratch(), ec);
  return 0;
}
