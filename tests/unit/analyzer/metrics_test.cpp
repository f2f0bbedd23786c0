// Hand-computed metric cases. The shared case (µs, plus a base offset):
//   stream 7: K1 gemm [0,100) call [-10,-5]; M1 memcpy HtoD pageable [290,320) call [280,285];
//             K3 gemm [400,500) call [250,255]
//   stream 8: K2 gemm [50,150) call [40,45]; K4 gemm [160,170) call [100,112]
//   stream 9: N1 ncclKernel_AllReduce [200,300), no runtime call
#include "fleetscope/analyzer/metrics.h"

#include <gtest/gtest.h>

#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;
constexpr int64_t B = testing::kSharedBase;

using testing::shared_case;

TEST(TemporalBreakdown, HandComputedCase) {
  CaptureData data = shared_case();
  auto rows = temporal_breakdown(data);
  ASSERT_EQ(rows.size(), 1u);
  const auto& r = rows[0];
  EXPECT_EQ(r.device, 0);
  EXPECT_EQ(r.span_ns, us(500));
  // union = [0,150) + [160,170) + [200,320) + [400,500) = 380
  EXPECT_EQ(r.idle_ns, us(120));
  // computation union = [0,150) + [160,170) + [400,500) = 260 (NCCL and memcpy excluded)
  EXPECT_EQ(r.compute_ns, us(260));
  EXPECT_EQ(r.non_compute_ns, us(120));
  EXPECT_DOUBLE_EQ(r.idle_fraction(), 0.24);
  EXPECT_DOUBLE_EQ(r.compute_fraction(), 0.52);
  EXPECT_DOUBLE_EQ(r.non_compute_fraction(), 0.24);
}

TEST(TemporalBreakdown, OneRowPerDevice) {
  testing::CaptureBuilder b;
  b.kernel(0, 100, 7, "gemm", 0).kernel(0, 50, 7, "gemm", 1).kernel(80, 100, 7, "gemm", 1);
  auto rows = temporal_breakdown(b.build());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].idle_ns, 0);
  EXPECT_EQ(rows[1].device, 1);
  EXPECT_EQ(rows[1].span_ns, 100);
  EXPECT_EQ(rows[1].idle_ns, 30);
}

TEST(TemporalBreakdown, StreamSyncWaitsCountAsHtaGpuEvents) {
  CaptureData data = shared_case();
  // A "Stream Sync" wait [330, 380) µs fills part of the idle gap and is not compute; a "Stream
  // Wait Event" [505, 520) µs extends the span and counts as compute (HTA's regex has no "Sync").
  auto add_sync = [&](int64_t b, int64_t e, const char* name) {
    data.gpu_syncs.start.push_back(B + us(b));
    data.gpu_syncs.end.push_back(B + us(e));
    data.gpu_syncs.device.push_back(0);
    data.gpu_syncs.stream.push_back(7);
    data.gpu_syncs.name_id.push_back(data.intern(name));
    data.gpu_syncs.work_class.push_back(classify_gpu_work(GpuEventKind::kernel, name));
  };
  add_sync(330, 380, "Stream Sync");
  add_sync(505, 520, "Stream Wait Event");
  auto rows = temporal_breakdown(data);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].span_ns, us(520));
  EXPECT_EQ(rows[0].idle_ns, us(120 - 50 + 5));  // [500,505) is a new gap
  EXPECT_EQ(rows[0].compute_ns, us(260 + 15));
  EXPECT_EQ(rows[0].non_compute_ns, us(520 - 275 - 75));
  // Syncs are not idle-breakdown events and not GPU work elsewhere.
  EXPECT_EQ(idle_time_breakdown(data)[0].other_ns, us(80));
  EXPECT_DOUBLE_EQ(gpu_utilization(data)[0].utilization(), 380.0 / 500.0);
}

TEST(IdleTimeBreakdown, HostWaitKernelWaitOther) {
  CaptureData data = shared_case();
  auto rows = idle_time_breakdown(data);
  ASSERT_EQ(rows.size(), 3u);
  // stream 7: M1 waits 190 µs on the host (its call started after K1 ended); K3's call came
  // before M1 ended, and 80 µs >= 30 µs → other.
  EXPECT_EQ(rows[0].stream, 7);
  EXPECT_EQ(rows[0].host_wait_ns, us(190));
  EXPECT_EQ(rows[0].kernel_wait_ns, 0);
  EXPECT_EQ(rows[0].other_ns, us(80));
  EXPECT_EQ(rows[0].host_wait_count, 1);
  EXPECT_NEAR(rows[0].ratio(rows[0].host_wait_ns), 190.0 / 270.0, 1e-12);
  // stream 8: K4's call (100) came before K2 ended (150); gap 10 µs < 30 µs → kernel wait.
  EXPECT_EQ(rows[1].stream, 8);
  EXPECT_EQ(rows[1].kernel_wait_ns, us(10));
  EXPECT_EQ(rows[1].host_wait_ns + rows[1].other_ns, 0);
  // stream 9: a single event has no idle interval.
  EXPECT_EQ(rows[2].total_ns(), 0);
}

TEST(IdleTimeBreakdown, ThresholdIsExplicitInNanoseconds) {
  CaptureData data = shared_case();
  IdleTimeOptions options;
  options.consecutive_kernel_delay_ns = us(100);  // now the 80 µs gap on stream 7 is kernel wait
  auto rows = idle_time_breakdown(data, options);
  EXPECT_EQ(rows[0].kernel_wait_ns, us(80));
  EXPECT_EQ(rows[0].other_ns, 0);
  options.consecutive_kernel_delay_ns = us(10);  // strict: a 10 µs gap is not below 10 µs
  rows = idle_time_breakdown(data, options);
  EXPECT_EQ(rows[1].kernel_wait_ns, 0);
  EXPECT_EQ(rows[1].other_ns, us(10));
}

TEST(LaunchStatistics, HandComputedCase) {
  CaptureData data = shared_case();
  LaunchStatistics s = launch_statistics(data);
  ASSERT_EQ(s.launches.size(), 5u);  // the NCCL kernel has no launch call
  // K4: call 12 µs, kernel 10 µs → the only short kernel.
  EXPECT_EQ(s.short_kernels, 1);
  EXPECT_EQ(s.short_kernel_gpu_ns, us(10));
  EXPECT_EQ(s.runtime_outliers, 0);
  // K3: starts 145 µs after its call returned.
  EXPECT_EQ(s.launch_delay_outliers, 1);
  EXPECT_EQ(s.launch_delay_excess_ns, us(45));
  EXPECT_EQ(s.launch_delay_p50_ns, us(5));
  EXPECT_EQ(s.launch_delay_p95_ns, us(145));
  EXPECT_EQ(s.launch_delay_max_ns, us(145));
  const LaunchRecord* k3 = nullptr;
  for (const auto& r : s.launches)
    if (r.gpu_start == B + us(400)) k3 = &r;
  ASSERT_NE(k3, nullptr);
  EXPECT_EQ(k3->cpu_duration_ns, us(5));
  EXPECT_EQ(k3->gpu_duration_ns, us(100));
  EXPECT_EQ(k3->launch_delay_ns(), us(145));
  EXPECT_EQ(k3->start_to_start_ns(), us(150));
  EXPECT_EQ(k3->hta_launch_delay_column_ns(), us(155));
}

TEST(LaunchStatistics, MemoryEventsCanBeExcludedAndCutoffsChanged) {
  CaptureData data = shared_case();
  LaunchStatisticsOptions options;
  options.include_memory_events = false;
  options.runtime_cutoff_ns = us(4);  // every call (>= 5 µs) is now a runtime outlier
  options.launch_delay_cutoff_ns = us(40);
  LaunchStatistics s = launch_statistics(data, options);
  EXPECT_EQ(s.launches.size(), 4u);
  EXPECT_EQ(s.runtime_outliers, 4);
  EXPECT_EQ(s.short_kernels, 0);
  EXPECT_EQ(s.launch_delay_outliers, 2);  // 145 and 48 µs
}

TEST(GpuUtilization, ProfilerPluginCaseUsesStepSpan) {
  testing::CaptureBuilder b;
  for (auto [s, e] : std::vector<std::pair<int64_t, int64_t>>{
           {130, 140}, {135, 150}, {150, 150}, {145, 170}, {200, 220}})
    b.kernel(us(s), us(e));
  b.step(1, us(100), us(220));
  auto rows = gpu_utilization(b.build());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].window_is_steps);
  EXPECT_EQ(rows[0].busy_ns, us(60));
  EXPECT_DOUBLE_EQ(rows[0].utilization(), 0.5);
}

TEST(GpuUtilization, WithoutStepsUsesDeviceSpan) {
  auto rows = gpu_utilization(shared_case());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].window_is_steps);
  EXPECT_DOUBLE_EQ(rows[0].utilization(), 380.0 / 500.0);
}

TEST(KernelSummary, SumsPerNameKernelsOnly) {
  auto rows = kernel_summary(shared_case());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "gemm");
  EXPECT_EQ(rows[0].count, 3);
  EXPECT_EQ(rows[0].total_ns, us(300));
  EXPECT_EQ(rows[1].work_class, WorkClass::communication);
  EXPECT_EQ(rows[2].name, "add");
  EXPECT_EQ(kernel_summary(shared_case(), 1).size(), 1u);
}

TEST(StepStats, MedianMeanMax) {
  testing::CaptureBuilder b;
  // Step 4 is the last ProfilerStep, cut short by the capture's end: not a step (HTA's rule,
  // counted_steps()).
  b.kernel(0, 10).step(1, 0, 100).step(2, 100, 300).step(3, 300, 400).step(4, 400, 420);
  StepStats s = step_stats(b.build());
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.median_ns, 100);
  EXPECT_EQ(s.mean_ns, 133);
  EXPECT_EQ(s.max_ns, 200);
}

TEST(Classification, HtaKernelTypes) {
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "ncclKernel_AllReduce"),
            WorkClass::communication);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "Memcpy HtoD (Pageable -> Device)"),
            WorkClass::memory);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::memset, "anything"), WorkClass::memory);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "volta_sgemm_128x64_nn"),
            WorkClass::computation);
  // HTA is_compute_kernel quirks: "nccl" must start the name and be followed by "Kernel";
  // "Memset" only at the start; "Sync" anywhere.
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "my_nccl_helper"), WorkClass::computation);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "ncclDevKernel_Generic"),
            WorkClass::communication);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "fill_Memset"), WorkClass::computation);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "Stream Sync"), WorkClass::synchronization);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "Stream Wait Event"), WorkClass::computation);
  EXPECT_STREQ(sync_label(store::kSyncStream), "Stream Sync");
  EXPECT_EQ(memcpy_label(1, 1, 3), "Memcpy HtoD (Pageable -> Device)");
}

}  // namespace
}  // namespace fleetscope::analyzer
