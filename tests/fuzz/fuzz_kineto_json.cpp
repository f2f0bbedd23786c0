// Fuzz target: the Kineto / PyTorch-profiler JSON importer, and the analysis of what it imports
// (analyzer::load_trace_file feeds the importer's rows to the analyzer, then every rule and the
// metrics document run). Bad input must end in fleetscope::Error (an InputError naming the file);
// any other exception, a crash or a sanitizer report is a finding.
//
// Then a differential check of the importer's two readers: the whole-document parse (one
// simdjson pass, what small files get) and the streamed one (the splitter cutting events out 64
// bytes at a time, then simdjson per batch, what large files get). They must accept the same
// inputs and produce the same rows from them: a file must not import differently, or at all,
// depending on its size. A difference aborts (a finding).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/error.h"
#include "fuzz_input_file.h"

namespace {

using namespace fleetscope;

std::string opt(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "-";
}

// One line of text per row (its kind and identifying fields), in the order the importer sent them.
struct DigestSink final : store::RowSink {
  std::vector<std::string> lines;
  int64_t add_capture(const store::Capture&) override { return 1; }
  void update_capture(const store::Capture& c) override {
    lines.push_back("capture " + opt(c.start_ns) + " " + opt(c.end_ns));
  }
  int64_t add_host(const store::Host& h) override {
    lines.push_back("host " + h.hostname);
    return 1;
  }
  int64_t add_workflow(const store::Workflow& w) override {
    lines.push_back("workflow " + w.name);
    return 1;
  }
  void upsert_process(const store::Process& p) override {
    lines.push_back("process " + std::to_string(p.globalPid));
  }
  void add_gpu(const store::GpuInfo& g) override { lines.push_back("gpu " + std::to_string(g.id)); }
  void add(store::Kernel r) override {
    lines.push_back("kernel " + r.demangledName + " " + std::to_string(r.start) + " " +
                    std::to_string(r.end) + " " + opt(r.correlationId) + " " + opt(r.globalPid));
  }
  void add(store::Memcpy r) override {
    lines.push_back("memcpy " + std::to_string(r.start) + " " + std::to_string(r.bytes));
  }
  void add(store::Memset r) override { lines.push_back("memset " + std::to_string(r.start)); }
  void add(store::RuntimeCall r) override {
    lines.push_back("runtime " + r.name + " " + std::to_string(r.start) + " " +
                    opt(r.correlationId) + " " + std::to_string(r.globalTid));
  }
  void add(store::Sync r) override { lines.push_back("sync " + std::to_string(r.start)); }
  void add(store::NvtxEvent r) override { lines.push_back("nvtx " + std::to_string(r.start)); }
  void add(store::CpuOp r) override {
    lines.push_back("cpu " + r.name + " " + r.category + " " + std::to_string(r.start) + " " +
                    std::to_string(r.end) + " " + std::to_string(r.globalTid));
  }
  void add(store::Iteration r) override { lines.push_back("step " + std::to_string(r.step)); }
  void add(store::MemoryEvent r) override {
    lines.push_back("memory " + std::to_string(r.ts) + " " + std::to_string(r.bytes));
  }
  void add(store::DeviceSample) override { lines.push_back("sample"); }
  void add(store::ExternalCorrelation) override { lines.push_back("external"); }
  void shift_times(int64_t, int64_t delta) override {
    lines.push_back("shift " + std::to_string(delta));
  }
};

// The rows of one reader, or its error when it rejected the input.
struct Outcome {
  std::vector<std::string> rows;
  std::optional<std::string> error;
};

Outcome rows_of(const std::string& path, bool streamed) {
  importers::ImportOptions options;
  options.whole_document_bytes = streamed ? 0 : int64_t{1} << 30;
  options.memory_budget_bytes = int64_t{16} << 20;  // the smallest batches the budget allows
  DigestSink sink;
  try {
    importers::import_file(path, sink, options);
  } catch (const Error& e) {
    return {{}, e.what()};
  }
  return {std::move(sink.lines), std::nullopt};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::write_input(data, size, ".json");
  try {
    const analyzer::CaptureData capture = analyzer::load_trace_file(path);
    (void)analyzer::analyze_capture(capture);
    (void)analyzer::metrics_json(capture).dump();
  } catch (const Error&) {
    // Rejected with a message: the expected outcome for bad input.
  }
  const Outcome whole = rows_of(path, false);
  const Outcome streamed = rows_of(path, true);
  if (whole.error.has_value() != streamed.error.has_value()) {
    std::fprintf(stderr, "only one reader rejected the input:\n  whole:    %s\n  streamed: %s\n",
                 whole.error.value_or("accepted").c_str(),
                 streamed.error.value_or("accepted").c_str());
    std::abort();
  }
  if (whole.rows != streamed.rows) {
    std::fprintf(stderr, "the streamed and whole-document readers differ: %zu vs %zu rows\n",
                 whole.rows.size(), streamed.rows.size());
    for (size_t i = 0; i < std::min(whole.rows.size(), streamed.rows.size()); ++i)
      if (whole.rows[i] != streamed.rows[i]) {
        std::fprintf(stderr, "first difference, row %zu:\n  whole:    %s\n  streamed: %s\n", i,
                     whole.rows[i].c_str(), streamed.rows[i].c_str());
        break;
      }
    std::abort();
  }
  return 0;
}
