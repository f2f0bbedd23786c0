#include "fleetscope/analyzer/declared_memory.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "fleetscope/store/error.h"
#include "fleetscope/store/unreadable_file.h"

namespace fleetscope::analyzer {

namespace {

// A finite decimal in [lo, hi]; the whole field must be the number.
double number(const std::string& field, double lo, double hi, const std::string& path, int line,
              const char* what) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(field.c_str(), &end);
  if (field.empty() || end != field.c_str() + field.size() || errno == ERANGE ||
      !std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream expected;
    expected << what << ": expected a number in [" << lo << ", " << hi << "], got '"
             << field.substr(0, 40) << (field.size() > 40 ? "...'" : "'");
    throw InputError(path, "line " + std::to_string(line), expected.str());
  }
  return v;
}

}  // namespace

std::map<std::string, DeclaredMemory> read_salus_workloads(const std::string& path) {
  // A FIFO is named, not read (its read waited for a writer for ever).
  if (auto problem = common::input_problem(path, "a Salus workloads table (CSV)"))
    throw unreadable_file(path, *problem);
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the workloads table");
  std::map<std::string, DeclaredMemory> rows;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream split(text);
    for (std::string field; fields.size() < 4 && std::getline(split, field, ',');)
      fields.push_back(field);
    if (fields.size() < 4)
      throw InputError(path, "line " + std::to_string(line),
                       "expected name_bs_duration,jct_s,peak_mb,iterations,command");
    const std::string& name = fields[0];
    if (name.empty()) throw InputError(path, "line " + std::to_string(line), "empty name");
    // Bounds: a week of run time, 1 TiB of GPU memory, 1e12 iterations.
    const double jct_s = number(fields[1], 0, 7 * 86400.0, path, line, "jct_s");
    const double peak_mb = number(fields[2], 0, 1024.0 * 1024, path, line, "peak_mb");
    const double iterations = number(fields[3], 0, 1e12, path, line, "iterations");
    DeclaredMemory m;
    m.source = path + ":" + name;
    m.peak_bytes = static_cast<int64_t>(std::llround(peak_mb * 1024 * 1024));
    m.iteration_ns =
        iterations >= 1 ? static_cast<int64_t>(std::llround(jct_s * 1e9 / iterations)) : 0;
    rows[name] = m;  // Salus lists some runs twice; the later row wins, as in its own reader
  }
  if (rows.empty()) throw InputError(path, "", "no workload rows");
  return rows;
}

void apply_declared_memory(ConsolidationCandidate& c, const DeclaredMemory& memory,
                           const ConsolidationOptions& options) {
  if (c.memory_measured) return;
  c.persistent_bytes = memory.peak_bytes;
  c.ephemeral_peak_bytes = 0;
  c.ephemeral_peak_stddev_bytes = -1;
  if (c.iteration_ns <= 0) c.iteration_ns = memory.iteration_ns;
  c.memory_source = memory.source;
  c.memory_evidence = "declared";
  // Shown after the evidence ("P and T: declared: <detail>"), so it does not say "declared" again.
  c.memory_evidence_detail = memory.source + " (peak taken whole as P)";
  c.co_location_candidate = false;
  if (c.utilization >= options.max_utilization) {
    c.reason = "GPU utilization " + std::to_string(int(c.utilization * 100)) + " %";
  } else if (c.gpu_memory_bytes > 0 && c.persistent_bytes > c.gpu_memory_bytes) {
    c.reason = "declared peak exceeds the GPU's memory";
  } else {
    c.co_location_candidate = true;
    c.reason = "low utilization; memory declared (" + memory.source + ")";
  }
}

}  // namespace fleetscope::analyzer
