// Fuzz target: the Kineto / PyTorch-profiler JSON importer, and the analysis of what it imports
// (analyzer::load_trace_file feeds the importer's rows to the analyzer, then every rule and the
// metrics document run). Bad input must end in fleetscope::Error (an InputError naming the file);
// any other exception, a crash or a sanitizer report is a finding.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/store/error.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetscope;
  const std::string& path = fuzz::write_input(data, size, ".json");
  try {
    const analyzer::CaptureData capture = analyzer::load_trace_file(path);
    (void)analyzer::analyze_capture(capture);
    (void)analyzer::metrics_json(capture).dump();
  } catch (const Error&) {
    // Rejected with a message: the expected outcome for bad input.
  }
  return 0;
}
