#include "fleetscope/analyzer/memory_bandwidth.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

namespace {

constexpr int64_t kZeroLengthAsNs = 1000;  // HTA: "round it up to 1 us"

struct Change {
  int64_t time;
  double delta;
};

struct KindEvents {
  std::vector<Change> changes;
  int64_t count = 0, bytes = 0, busy_ns = 0;
};

using Key = std::pair<int32_t, std::string>;

std::map<Key, KindEvents> memory_events(const CaptureData& data, bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  const auto& g = data.gpu;
  std::unordered_map<int64_t, std::string> kind_of_name;  // "" = not HTA MEMORY
  for (size_t i = 0; i < g.size(); ++i)
    if (!kind_of_name.count(g.name_id[i])) {
      const std::string& name = data.name(g.name_id[i]);
      kind_of_name[g.name_id[i]] =
          hta_kernel_type(name) == HtaKernelType::memory ? hta_memory_kernel_type(name) : "";
    }
  std::map<Key, KindEvents> out;
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string& kind = kind_of_name.at(g.name_id[i]);
    if (kind.empty() || !filter.keeps_gpu_event(data, i)) continue;
    KindEvents& k = out[{g.device[i], kind}];
    const int64_t duration = g.duration(i) > 0 ? g.duration(i) : kZeroLengthAsNs;
    const int64_t bytes = g.bytes.empty() ? 0 : std::max<int64_t>(0, g.bytes[i]);
    const double gbps = double(bytes) / double(duration);
    k.changes.push_back({g.start[i], gbps});
    k.changes.push_back({g.start[i] + duration, -gbps});
    ++k.count, k.bytes += bytes, k.busy_ns += g.duration(i);
  }
  return out;
}

MemoryBandwidthSeries running_sum(const Key& key, std::vector<Change> changes) {
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.time != b.time ? a.time < b.time : a.delta < b.delta;
  });
  MemoryBandwidthSeries s{key.first, key.second, {}};
  s.points.reserve(changes.size());
  double running = 0;
  for (const Change& c : changes) {
    running += c.delta;
    // Float sums of ± the same values can leave a tiny residue where the true value is 0.
    if (running < 1e-12 && running > -1e-12) running = 0;
    s.points.push_back({c.time, running});
  }
  return s;
}

}  // namespace

std::string hta_memory_kernel_type(const std::string& name) {
  if (name.rfind("Memset", 0) == 0) return "Memset";
  if (name.rfind("Memcpy", 0) != 0) return "Memcpy Unknown";
  return name.substr(0, 11);  // len("Memcpy DtoH")
}

std::vector<MemoryBandwidthSeries> memory_bandwidth_time_series(const CaptureData& data,
                                                                bool hta_last_step_filter) {
  std::vector<MemoryBandwidthSeries> out;
  for (auto& [key, events] : memory_events(data, hta_last_step_filter))
    out.push_back(running_sum(key, std::move(events.changes)));
  return out;
}

std::vector<MemoryBandwidthSummary> memory_bandwidth_summary(const CaptureData& data,
                                                             bool hta_last_step_filter) {
  std::vector<MemoryBandwidthSummary> out;
  for (auto& [key, events] : memory_events(data, hta_last_step_filter)) {
    MemoryBandwidthSummary s{key.first, key.second, events.count, events.bytes, events.busy_ns, {}};
    std::vector<double> positive;
    for (const BandwidthPoint& p : running_sum(key, std::move(events.changes)).points)
      if (p.gbps > 0) positive.push_back(p.gbps);
    s.gbps = describe(std::move(positive));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fleetscope::analyzer
