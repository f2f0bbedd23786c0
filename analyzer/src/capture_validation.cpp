// check_time_ranges (capture_data.h): every time of a capture within ±kMaxAbsTimeNs before any
// metric does arithmetic on it.
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/store/error.h"

namespace fleetscope::analyzer {
namespace {

bool in_range(int64_t t) {
  return t >= -kMaxAbsTimeNs && t <= kMaxAbsTimeNs;
}

[[noreturn]] void out_of_range(const CaptureData& data, const std::string& what, size_t index,
                               const char* field, int64_t value) {
  const std::string file = !data.origin_file.empty() ? data.origin_file
                           : !data.capture.source_path.empty()
                               ? data.capture.source_path
                               : "capture " + std::to_string(data.capture.id);
  throw InputError(
      file,
      "capture " + std::to_string(data.capture.id) + ", " + what + " #" + std::to_string(index),
      std::string(field) + " = " + std::to_string(value) +
          " ns is out of range (expected a time within ±2^62 ns of the epoch; the "
          "value is corrupt)");
}

template <class Get>
void check_all(const CaptureData& data, const std::string& what, size_t n, const char* field,
               Get get) {
  for (size_t i = 0; i < n; ++i)
    if (const int64_t t = get(i); !in_range(t)) out_of_range(data, what, i, field, t);
}

}  // namespace

void check_time_ranges(const CaptureData& data) {
  const auto& g = data.gpu;
  check_all(data, "GPU event", g.size(), "start", [&](size_t i) { return g.start[i]; });
  check_all(data, "GPU event", g.size(), "end", [&](size_t i) { return g.end[i]; });
  const auto& r = data.runtime;
  check_all(data, "runtime call", r.size(), "start", [&](size_t i) { return r.start[i]; });
  check_all(data, "runtime call", r.size(), "end", [&](size_t i) { return r.end[i]; });
  const auto& s = data.gpu_syncs;
  check_all(data, "sync", s.size(), "start", [&](size_t i) { return s.start[i]; });
  check_all(data, "sync", s.size(), "end", [&](size_t i) { return s.end[i]; });
  const auto& w = data.sync_waits;
  check_all(data, "sync wait", w.size(), "start", [&](size_t i) { return w[i].start; });
  check_all(data, "sync wait", w.size(), "end", [&](size_t i) { return w[i].end; });
  const auto& it = data.iterations;
  check_all(data, "iteration", it.size(), "start", [&](size_t i) { return it[i].start; });
  check_all(data, "iteration", it.size(), "end", [&](size_t i) { return it[i].end; });
  const auto& m = data.memory;
  check_all(data, "memory event", m.size(), "ts", [&](size_t i) { return m[i].ts; });
  for (const auto* ranges : {&data.cpu_ops, &data.dataloader_ops}) {
    const char* what = ranges == &data.cpu_ops ? "cpu op" : "DataLoader op";
    check_all(data, what, ranges->size(), "start", [&](size_t i) { return (*ranges)[i].start; });
    check_all(data, what, ranges->size(), "end", [&](size_t i) { return (*ranges)[i].end; });
  }
  if (data.capture.start_ns && !in_range(*data.capture.start_ns))
    out_of_range(data, "capture", 0, "start_ns", *data.capture.start_ns);
  if (data.capture.end_ns && !in_range(*data.capture.end_ns))
    out_of_range(data, "capture", 0, "end_ns", *data.capture.end_ns);
}

}  // namespace fleetscope::analyzer
