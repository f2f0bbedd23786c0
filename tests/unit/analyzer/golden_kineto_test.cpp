// Golden checks on the shared HTA Kineto traces, imported with the real importer. The analyzer's
// columnar metrics are cross-checked against a second, naive computation over the store's typed
// rows (Reader::kernels/memcpys/memsets, sort + sweep), and HTA's identities are asserted.
// Value-for-value parity with the HTA package lives in tests/unit/analyzer_hta.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/importers/importers.h"

namespace fleetscope::analyzer {
namespace {

std::string trace(const std::string& name) {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + name;
}

struct Imported {
  testing::TempDir dir;
  std::string db;
  int64_t capture = 0;
};

std::unique_ptr<Imported> import_one(const std::string& name) {
  auto out = std::make_unique<Imported>();
  out->db = out->dir.file("t.db");
  auto results = importers::import_files({trace(name)}, out->db);
  out->capture = results.at(0).capture_id;
  return out;
}

// Naive per-device busy time and span from the typed rows.
struct Naive {
  int64_t span = 0, busy = 0;
};
std::map<int32_t, Naive> naive_busy(const store::Reader& reader, int64_t capture) {
  store::EventFilter f;
  f.captureId = capture;
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> by_device;
  for (const auto& k : reader.kernels(f)) by_device[k.deviceId].push_back({k.start, k.end});
  for (const auto& m : reader.memcpys(f)) by_device[m.deviceId].push_back({m.start, m.end});
  for (const auto& m : reader.memsets(f)) by_device[m.deviceId].push_back({m.start, m.end});
  // HTA also counts sync waits that carry a stream; one without a device is on the only GPU.
  for (const auto& s : reader.syncs(f)) {
    if (!s.streamId) continue;
    if (s.deviceId) {
      by_device[*s.deviceId].push_back({s.start, s.end});
    } else if (by_device.size() == 1) {
      by_device.begin()->second.push_back({s.start, s.end});
    }
  }
  std::map<int32_t, Naive> out;
  for (auto& [device, list] : by_device) {
    std::sort(list.begin(), list.end());
    Naive n;
    int64_t cur_b = list[0].first, cur_e = list[0].second, last = list[0].second;
    for (auto [b, e] : list) {
      last = std::max(last, e);
      if (b > cur_e) {
        n.busy += cur_e - cur_b;
        cur_b = b, cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    n.busy += cur_e - cur_b;
    n.span = last - list[0].first;
    out[device] = n;
  }
  return out;
}

class GoldenKineto : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenKineto, TemporalBreakdownMatchesNaiveSweepAndHtaIdentities) {
  ASSERT_TRUE(std::filesystem::exists(trace(GetParam())))
      << "reference trace missing: " << trace(GetParam()) << " (tests/data/README.md)";
  auto imported = import_one(GetParam());
  store::Reader reader(imported->db);
  CaptureData data = load_capture(reader, imported->capture);
  ASSERT_GT(data.gpu.size(), 0u);
  auto naive = naive_busy(reader, imported->capture);
  TemporalBreakdownOptions whole;  // the naive sweep sees every event
  whole.hta_last_step_filter = false;
  auto rows = temporal_breakdown(data, whole);
  ASSERT_EQ(rows.size(), naive.size());
  for (const auto& r : rows) {
    const Naive& n = naive.at(r.device);
    EXPECT_EQ(r.span_ns, n.span);
    EXPECT_EQ(r.idle_ns, n.span - n.busy);
    EXPECT_EQ(r.idle_ns + r.compute_ns + r.non_compute_ns, r.span_ns);
    EXPECT_GE(r.non_compute_ns, 0);  // HTA asserts the same
    EXPECT_LE(r.compute_ns, r.span_ns);
  }
  // Idle-time breakdown: per stream, the categories sum to the gaps between consecutive events.
  IdleTimeOptions idle_options;
  idle_options.hta_last_step_filter = false;
  for (const auto& s : idle_time_breakdown(data, idle_options)) {
    const auto& members = data.events_by_stream.at({s.device, s.stream});
    int64_t expected = 0;
    for (size_t k = 1; k < members.size(); ++k)
      expected += data.gpu.start[members[k]] - data.gpu.end[members[k - 1]];
    EXPECT_EQ(s.total_ns(), expected);
  }
  // Every launch record joins a GPU event to a runtime call with the same correlation id.
  auto launches = launch_statistics(data);
  for (const auto& l : launches.launches)
    EXPECT_EQ(data.runtime.correlation[l.runtime_index], data.gpu.correlation[l.gpu_index]);
  // The full rule set runs and every finding is well formed.
  for (const auto& f : analyze(data)) {
    EXPECT_GE(f.impact_ns, 0) << f.rule;
    EXPECT_FALSE(f.recommendation.empty()) << f.rule;
    EXPECT_EQ(f.evidence_json.front(), '{') << f.rule;
  }
}

INSTANTIATE_TEST_SUITE_P(Traces, GoldenKineto,
                         ::testing::Values("hta-critical_path_alexnet_trace.json.gz",
                                           "hta-ns_resolution_trace_rank-0.json.gz",
                                           "hta-timeline_analysis_sampled_rank-0.json.gz",
                                           "hta-nccl_parser_config_nccl_data.json.gz"),
                         [](const auto& info) {
                           std::string n = info.param.substr(4, info.param.find('.') - 4);
                           std::replace_if(
                               n.begin(), n.end(), [](char c) { return !isalnum(c); }, '_');
                           return n;
                         });

TEST(GoldenKinetoNsResolution, HasStepsKernelsAndLaunches) {
  const std::string name = "hta-ns_resolution_trace_rank-0.json.gz";
  ASSERT_TRUE(std::filesystem::exists(trace(name)))
      << "reference trace missing: " << trace(name) << " (tests/data/README.md)";
  auto imported = import_one(name);
  store::Reader reader(imported->db);
  CaptureData data = load_capture(reader, imported->capture);
  // README: V100, ProfilerStep#101-105, ~4,350 kernels.
  EXPECT_EQ(data.iterations.size(), 5u);
  EXPECT_EQ(data.iterations.front().step, 101);
  size_t kernels = 0;
  for (auto k : data.gpu.kind) kernels += k == GpuEventKind::kernel;
  EXPECT_GT(kernels, 4000u);
  EXPECT_LT(kernels, 4700u);
  auto launches = launch_statistics(data);
  EXPECT_GT(launches.launches.size(), kernels / 2);
}

}  // namespace
}  // namespace fleetscope::analyzer
