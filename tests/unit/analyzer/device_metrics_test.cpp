// Per-device metrics: hand-computed cases, the profiler plugin's hand-computable utilization case,
// and the plugin's GPU-metrics test data (tb-gpu_metrics_input.json →
// tb-gpu_metrics_expected.json).
#include "fleetscope/analyzer/device_metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/metrics.h"
#include "shared_case.h"

#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {
namespace {

using testing::CaptureBuilder;
using testing::us;

TEST(DeviceMetrics, SharedCaseBusyIdleAndTypes) {
  auto rows = device_metrics(testing::shared_case());
  ASSERT_EQ(rows.size(), 1u);
  const DeviceMetrics& m = rows[0];
  EXPECT_EQ(m.span_ns, us(500));
  // Kernels: [0,150) + [160,170) + [200,300) + [400,500); the memcpy [290,320) adds 20 µs more.
  EXPECT_EQ(m.busy_kernels_ns, us(360));
  EXPECT_EQ(m.busy_all_ns, us(380));
  EXPECT_EQ(m.idle_ns, us(120));
  EXPECT_EQ(m.kernel_time_by_type.computation_ns, us(260));
  EXPECT_EQ(m.kernel_time_by_type.communication_ns, us(100));
  EXPECT_EQ(m.kernel_time_by_type.memory_ns, us(30));
  EXPECT_EQ(m.kernel_time_by_type.other_ns, 0);
  // The NCCL kernel [200,300) overlaps no computation.
  EXPECT_EQ(m.comm_comp_overlap.communication_ns, us(100));
  EXPECT_EQ(m.comm_comp_overlap.overlap_ns, 0);
  ASSERT_TRUE(m.comm_comp_overlap.ratio().has_value());
  EXPECT_DOUBLE_EQ(*m.comm_comp_overlap.ratio(), 0.0);
  // No steps, no CPU ops, no GPU facts, no occupancy: each says what it needs.
  EXPECT_FALSE(m.kernel_utilization_steps.has_value());
  EXPECT_NE(m.kernel_utilization_steps_needs.find("ProfilerStep"), std::string::npos);
  EXPECT_FALSE(m.est_sm_efficiency.has_value());
  EXPECT_NE(m.est_sm_efficiency_needs.find("smCount"), std::string::npos);
  EXPECT_FALSE(m.est_achieved_occupancy.has_value());
  EXPECT_NE(m.est_achieved_occupancy_needs.find("est. achieved occupancy"), std::string::npos);
}

// The profiler plugin's hand-computable case (tests/data/README.md): one device, steps
// [100, 220] µs, kernels [130,140) [135,150) [150,150) [145,170) [200,220) → 60/120.
TEST(DeviceMetrics, PluginUtilizationCaseCountsKernelsOnly) {
  CaptureBuilder b;
  for (auto [s, e] : std::vector<std::pair<int64_t, int64_t>>{
           {130, 140}, {135, 150}, {150, 150}, {145, 170}, {200, 220}})
    b.kernel(us(s), us(e));
  b.step(1, us(100), us(220));
  CaptureData plain = b.build();
  auto rows = device_metrics(plain);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].kernel_utilization_steps.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].kernel_utilization_steps, 0.5);
  EXPECT_EQ(rows[0].kernel_busy_in_steps_ns, us(60));
  ASSERT_TRUE(rows[0].steps_span.has_value());
  EXPECT_EQ(*rows[0].steps_span, (Interval{us(100), us(220)}));

  // A memcpy [100,130) is GPU work for metrics.h gpu_utilization() but not for the plugin.
  b.memcpy(us(100), us(130), 7, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 64);
  CaptureData with_copy = b.build();
  EXPECT_DOUBLE_EQ(*device_metrics(with_copy)[0].kernel_utilization_steps, 0.5);
  EXPECT_DOUBLE_EQ(gpu_utilization(with_copy)[0].utilization(), 90.0 / 120.0);
}

// SM efficiency and occupancy on 4 SMs, steps [0,200) µs:
//   A [0,100)   grid 2 (0.5 blocks/SM), occupancy 40 %
//   B [50,150)  grid 4 (1.0),           occupancy unknown
//   C [150,200) grid unknown,           occupancy 80 %
// Ranges: [0,50) 0.5, [50,100) min(1.5, 1) = 1, [100,150) 1 → (25 + 50 + 50) / 200.
// Occupancy: (40·100 + 80·50) / 150.
CaptureBuilder shape_case(int64_t step_begin_us) {
  CaptureBuilder b;
  b.gpu_info(0, 4);
  b.kernel(us(0), us(100)).shape(2, 40.0);
  b.kernel(us(50), us(150)).shape(4, std::nan(""));
  b.kernel(us(150), us(200)).shape(0, 80.0);
  b.step(1, us(step_begin_us), us(200));
  return b;
}

TEST(DeviceMetrics, EstimatedSmEfficiencyAndOccupancyFollowThePlugin) {
  CaptureData data = shape_case(0).build();
  auto ranges = sm_efficiency_ranges(data, 0);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].range, (Interval{us(0), us(50)}));
  EXPECT_DOUBLE_EQ(ranges[0].value, 0.5);
  EXPECT_EQ(ranges[1].range, (Interval{us(50), us(100)}));
  EXPECT_DOUBLE_EQ(ranges[1].value, 1.0);  // 1.5 capped
  EXPECT_EQ(ranges[2].range, (Interval{us(100), us(150)}));
  EXPECT_DOUBLE_EQ(ranges[2].value, 1.0);
  auto m = device_metrics(data).at(0);
  ASSERT_TRUE(m.est_sm_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*m.est_sm_efficiency, 125.0 / 200.0);
  ASSERT_TRUE(m.est_achieved_occupancy.has_value());
  EXPECT_DOUBLE_EQ(*m.est_achieved_occupancy, (40.0 * 100 + 80.0 * 50) / 150.0);
}

TEST(DeviceMetrics, SmEfficiencyAndOccupancyAreClippedToTheSteps) {
  // Steps [25,200): SM efficiency (0.5·25 + 50 + 50) / 175; occupancy (40·75 + 80·50) / 125.
  auto m = device_metrics(shape_case(25).build()).at(0);
  EXPECT_DOUBLE_EQ(*m.est_sm_efficiency, 112.5 / 175.0);
  EXPECT_DOUBLE_EQ(*m.est_achieved_occupancy, 7000.0 / 125.0);
}

TEST(DeviceMetrics, SmEfficiencyNamesTheMissingLaunchShape) {
  CaptureBuilder b;
  b.gpu_info(0, 80).kernel(0, 100).step(1, 0, 100);  // grid unknown
  auto m = device_metrics(b.build()).at(0);
  EXPECT_FALSE(m.est_sm_efficiency.has_value());
  EXPECT_NE(m.est_sm_efficiency_needs.find("grid"), std::string::npos);
  EXPECT_DOUBLE_EQ(*m.kernel_utilization_steps, 1.0);
}

TEST(GpuUtilizationTimeline, PowerOfTenBucketsAndALongerLastBucket) {
  CaptureBuilder b;
  b.kernel(us(5), us(15)).kernel(us(950), us(1050));
  CaptureData data = b.build();
  // 1000 µs → 10 µs buckets, 100 of them.
  auto fine = gpu_utilization_timeline(data, 0, {0, us(1000)});
  ASSERT_EQ(fine.size(), 100u);
  EXPECT_DOUBLE_EQ(fine[0].utilization, 0.5);
  EXPECT_DOUBLE_EQ(fine[1].utilization, 0.5);
  EXPECT_DOUBLE_EQ(fine[2].utilization, 0.0);
  EXPECT_DOUBLE_EQ(fine[99].utilization, 1.0);
  // 1050 µs → 100 µs buckets, int(10.5) = 10 of them, the last [900, 1050).
  auto coarse = gpu_utilization_timeline(data, 0, {0, us(1050)});
  ASSERT_EQ(coarse.size(), 10u);
  EXPECT_EQ(coarse.back().bucket, (Interval{us(900), us(1050)}));
  EXPECT_DOUBLE_EQ(coarse.back().utilization, 100.0 / 150.0);
  EXPECT_DOUBLE_EQ(coarse[0].utilization, 0.1);
}

TEST(CommCompOverlap, HtaDefinitionWithTheLastStepFilter) {
  // Steps [0,100) and [100,200) µs. NCCL [10,50) and gemm [30,40) launched in step 1; gemm
  // [40,60) launched in the last step, which HTA drops.
  CaptureBuilder b;
  b.step(1, 0, us(100)).step(2, us(100), us(200));
  b.kernel(us(10), us(50), 9, "ncclKernel_AllReduce_RING_LL_Sum_float", 0, std::pair{us(5), us(6)});
  b.kernel(us(30), us(40), 7, "gemm", 0, std::pair{us(7), us(8)});
  b.kernel(us(40), us(60), 7, "gemm", 0, std::pair{us(150), us(151)});
  CaptureData data = b.build();
  auto hta = comm_comp_overlap(data);
  ASSERT_EQ(hta.size(), 1u);
  EXPECT_EQ(hta[0].communication_ns, us(40));
  EXPECT_EQ(hta[0].overlap_ns, us(10));
  EXPECT_DOUBLE_EQ(*hta[0].ratio(), 0.25);
  auto whole = comm_comp_overlap(data, false);
  EXPECT_DOUBLE_EQ(*whole[0].ratio(), 0.5);
  // Without communication kernels the ratio is undefined (HTA: 0/0).
  CaptureBuilder none;
  none.kernel(0, 10);
  EXPECT_FALSE(comm_comp_overlap(none.build())[0].ratio().has_value());
}

std::string tb_file(const std::string& name) {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + name;
}

// The plugin's counters in the expected file: (ts µs, value) per counter name, in file order.
std::vector<std::pair<int64_t, double>> counters(const nlohmann::json& trace,
                                                 const std::string& name, const std::string& arg) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& e : trace["traceEvents"])
    if (e.value("ph", "") == "C" && e.value("name", "") == name)
      out.emplace_back(e["ts"].get<int64_t>(), e["args"][arg].get<double>());
  return out;
}

// tb_plugin test_profiler.py test_dump_gpu_metrics writes tb-gpu_metrics_expected.json from
// values it states as "faked for easy to see in UI": the utilization buckets are 100x and the SM
// efficiency ranges 10x the real values of tb-gpu_metrics_input.json. Checked here: every bucket
// and every range, computed by fleetscope from the imported input, against that file.
TEST(TbPluginGpuMetrics, MatchesThePluginsExpectedOutput) {
  const std::string input = tb_file("tb-gpu_metrics_input.json");
  const std::string expected_path = tb_file("tb-gpu_metrics_expected.json");
  ASSERT_TRUE(std::filesystem::exists(input)) << "reference trace missing: " << input;
  ASSERT_TRUE(std::filesystem::exists(expected_path))
      << "reference output missing: " << expected_path;
  testing::TempDir dir;
  const std::string db = dir.file("tb.db");
  auto results = importers::import_files({input}, db);
  store::Reader reader(db);
  CaptureData data = load_capture(reader, results.at(0).capture_id);
  std::ifstream in(expected_path);
  const nlohmann::json expected = nlohmann::json::parse(in);

  // Utilization buckets: a 1 / 0 baseline pair, the buckets, then (end, 0).
  auto util = counters(expected, "GPU 0 Utilization", "GPU Utilization");
  ASSERT_GE(util.size(), 4u);
  const Interval range{util.front().first * 1000, util.back().first * 1000};
  auto buckets = gpu_utilization_timeline(data, 0, range);
  ASSERT_EQ(buckets.size(), util.size() - 3);
  for (size_t k = 0; k < buckets.size(); ++k) {
    EXPECT_EQ(buckets[k].bucket.begin, util[k + 2].first * 1000) << "bucket " << k;
    EXPECT_NEAR(buckets[k].utilization * 100, util[k + 2].second, 1e-9) << "bucket " << k;
  }
  EXPECT_EQ(util.back().second, 0.0);

  // SM efficiency: a baseline pair, then (start, value), (end, 0) per range.
  auto sm = counters(expected, "GPU 0 Est. SM Efficiency", "Est. SM Efficiency");
  auto ranges = sm_efficiency_ranges(data, 0);
  ASSERT_EQ(ranges.size() * 2 + 2, sm.size());
  for (size_t k = 0; k < ranges.size(); ++k) {
    EXPECT_EQ(ranges[k].range.begin, sm[2 + 2 * k].first * 1000) << "range " << k;
    EXPECT_EQ(ranges[k].range.end, sm[3 + 2 * k].first * 1000) << "range " << k;
    EXPECT_NEAR(ranges[k].value * 10, sm[2 + 2 * k].second, 1e-12) << "range " << k;
  }

  // The overview numbers over ProfilerStep#2 [223358, 236768] µs: 48 µs of kernels (30 kernels,
  // none overlapping), Σ blocks-per-SM·duration = 0.7375 µs; the input has no
  // "est. achieved occupancy %" (only the older "theoretical occupancy %").
  auto rows = device_metrics(data);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].steps_span, (Interval{1621401187223358 * 1000, 1621401187236768 * 1000}));
  EXPECT_EQ(rows[0].kernel_busy_in_steps_ns, us(48));
  EXPECT_DOUBLE_EQ(*rows[0].kernel_utilization_steps, 48.0 / 13410.0);
  EXPECT_NEAR(*rows[0].est_sm_efficiency, 0.7375 / 13410.0, 1e-15);
  EXPECT_FALSE(rows[0].est_achieved_occupancy.has_value());
  EXPECT_NE(rows[0].est_achieved_occupancy_needs.find("estOccupancy"), std::string::npos);
}

// HTA's own get_comm_comp_overlap values on the shared traces are compared in
// tests/unit/analyzer_hta (HtaParity.CommCompOverlap).

}  // namespace
}  // namespace fleetscope::analyzer
