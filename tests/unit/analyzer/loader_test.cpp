#include "fleetscope/analyzer/loader.h"

#include <gtest/gtest.h>

#include "db_fixture.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/table_columns.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;

TEST(Loader, LoadsEveryGpuEventKindSortedAndLinked) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  std::vector<std::string> stages;
  CaptureData data = load_capture(
      reader, ids.capture, [&](const std::string& stage, int64_t) { stages.push_back(stage); });
  EXPECT_FALSE(stages.empty());
  ASSERT_EQ(data.gpu.size(), 6u);
  EXPECT_EQ(data.runtime.size(), 5u);
  for (size_t i = 1; i < data.gpu.size(); ++i) EXPECT_LE(data.gpu.start[i - 1], data.gpu.start[i]);
  size_t linked = 0;
  for (int64_t call : data.launch_call_of) linked += call >= 0;
  EXPECT_EQ(linked, 5u);
  EXPECT_EQ(data.iterations.size(), 2u);
  EXPECT_EQ(data.memory.size(), 5u);
  ASSERT_EQ(data.gpus.size(), 1u);
  EXPECT_EQ(data.gpus[0].name, "NVIDIA A100-SXM4-40GB");
  // The memcpy gets Kineto's label so name-based classification matches HTA.
  bool found_memcpy = false;
  for (size_t i = 0; i < data.gpu.size(); ++i)
    if (data.gpu.kind[i] == GpuEventKind::memcpy) {
      found_memcpy = true;
      EXPECT_EQ(data.name(data.gpu.name_id[i]), "Memcpy HtoD (Pageable -> Device)");
      EXPECT_EQ(data.gpu.src_kind[i], store::kMemPageable);
    }
  EXPECT_TRUE(found_memcpy);
}

// A load reads one snapshot: the check capture_rows_sql makes before a read (a pass over the
// capture's rows of a table) is made at most once per table, not before each of the load's
// twenty-odd queries, and a second load of the unchanged file makes none.
TEST(Loader, ALoadChecksEachTablesRowRangesOnce) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  uint64_t ranged = 0;
  for (const auto& t : store::table_columns::kTables)
    ranged += store::has_row_ranges(std::string(t.name));
  const uint64_t before = store::capture_range_checks_made();
  const CaptureData data = load_capture(reader, ids.capture);
  EXPECT_EQ(data.gpu.size(), 6u);
  const uint64_t first = store::capture_range_checks_made() - before;
  EXPECT_GT(first, 0u);
  EXPECT_LE(first, ranged);
  (void)load_capture(reader, ids.capture);
  EXPECT_EQ(store::capture_range_checks_made() - before, first);
}

TEST(Loader, MetricsFromDatabaseMatchHandComputedValues) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  CaptureData data = load_capture(reader, ids.capture);
  // The fixture has two ProfilerSteps; the hand values are for the whole capture.
  TemporalBreakdownOptions whole;
  whole.hta_last_step_filter = false;
  auto t = temporal_breakdown(data, whole);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].span_ns, us(500));
  EXPECT_EQ(t[0].idle_ns, us(120));
  EXPECT_EQ(t[0].compute_ns, us(260));
  EXPECT_EQ(t[0].non_compute_ns, us(120));
  IdleTimeOptions idle_options;
  idle_options.hta_last_step_filter = false;
  auto idle = idle_time_breakdown(data, idle_options);
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_EQ(idle[0].host_wait_ns, us(190));
  EXPECT_EQ(idle[0].other_ns, us(80));
  EXPECT_EQ(idle[1].kernel_wait_ns, us(10));
  LaunchStatisticsOptions launch_options;
  launch_options.hta_last_step_filter = false;
  auto launches = launch_statistics(data, launch_options);
  EXPECT_EQ(launches.launches.size(), 5u);
  EXPECT_EQ(launches.short_kernels, 1);
  EXPECT_EQ(launches.launch_delay_outliers, 1);
  // Steps cover [0, 500) µs: utilization = 380 / 500.
  auto util = gpu_utilization(data);
  ASSERT_EQ(util.size(), 1u);
  EXPECT_TRUE(util[0].window_is_steps);
  EXPECT_DOUBLE_EQ(util[0].utilization(), 0.76);
}

TEST(Loader, HtaLastStepFilterDropsWorkLaunchedInTheLastStep) {
  // Steps start at 0 and 250 µs: HTA keeps only GPU work whose launch call started before 250 µs
  // — K1, K2, K4; M1 (call 280), K3 (call 250) and the NCCL kernel (no call) are dropped.
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  CaptureData data = load_capture(reader, ids.capture);
  auto filter = HtaStepFilter::for_capture(data);
  EXPECT_TRUE(filter.active);
  EXPECT_EQ(filter.last_step_start, testing::kBase + us(250));
  auto t = temporal_breakdown(data);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].span_ns, us(170));
  EXPECT_EQ(t[0].idle_ns, us(10));
  EXPECT_EQ(t[0].compute_ns, us(160));
  EXPECT_EQ(t[0].non_compute_ns, 0);
  auto idle = idle_time_breakdown(data);
  ASSERT_EQ(idle.size(), 2u);  // stream 9 has no kept event
  EXPECT_EQ(idle[0].total_ns(), 0);
  EXPECT_EQ(idle[1].kernel_wait_ns, us(10));
  auto launches = launch_statistics(data);
  EXPECT_EQ(launches.launches.size(), 3u);
  EXPECT_EQ(launches.short_kernels, 1);
  EXPECT_EQ(launches.launch_delay_outliers, 0);
}

TEST(Loader, ResolvesCaptureAndRejectsUnknownIds) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  EXPECT_EQ(resolve_capture_id(reader, std::nullopt), ids.capture);
  EXPECT_EQ(resolve_capture_id(reader, ids.capture), ids.capture);
  EXPECT_THROW(resolve_capture_id(reader, 999), InputError);
  EXPECT_THROW(load_capture(reader, 999), InputError);
}

TEST(Loader, EmptyDatabaseHasNoCapture) {
  testing::TempDir dir;
  {
    store::Writer writer(store::Database::create(dir.file("empty.db")));
    writer.finish();
  }
  store::Reader reader(dir.file("empty.db"));
  EXPECT_THROW(resolve_capture_id(reader, std::nullopt), InputError);
}

}  // namespace
}  // namespace fleetscope::analyzer
