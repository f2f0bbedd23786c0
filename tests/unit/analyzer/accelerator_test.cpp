// Non-CUDA accelerators and the HTA metrics added for them: a Kineto-style MTIA capture (device
// work from `mtia_ccp_events`, launches from `mtia_runtime`'s
// "runFunction - job_prep_and_submit_for_execution", DMA transfers named "dma...") written through
// store::Writer and analysed as HTA 0.5.0 does (launch statistics, queue length, kernel types,
// idle time per stream). Also hand-computed cases for the queue length and the kernel-type
// states, and the last-step filter of kernel_time_by_type.
#include <gtest/gtest.h>

#include "capture_builder.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/queue_length.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

namespace fleetscope::analyzer {
namespace {

using testing::CaptureBuilder;
using testing::us;

constexpr int64_t kBase = 5'000'000'000;
constexpr const char* kMtiaLaunch = "runFunction - job_prep_and_submit_for_execution";

// The MTIA capture (µs from kBase), device 0, stream 3:
//   call c1 [0,10]  -> mtia_gemm_fwd [20,60]
//   call c2 [12,18] -> dma_h2d_copy  [60,80]   (HTA: MEMORY, ^dma)
//   call c3 [30,40] -> mtia_relu     [90,100]
//   an mtia_runtime call that launches nothing, and a kernel without a launch call [200,210] on
//   stream 4.
std::string write_mtia_capture(const test_support::TempDir& dir) {
  const std::string path = dir.file("mtia.db");
  store::Writer writer(store::Database::create(path));
  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = "kineto-json";
  capture.source_path = "mtia_trace.json";
  capture.gpu_vendor = "mtia";
  const int64_t id = writer.add_capture(capture);
  const int64_t pid = 77;
  auto at = [](int64_t t_us) { return kBase + us(t_us); };
  int64_t correlation = 1;
  auto call = [&](int64_t s, int64_t e, const std::string& name) {
    store::RuntimeCall c;
    c.start = at(s), c.end = at(e), c.globalTid = store::global_tid(pid, pid);
    c.correlationId = correlation, c.name = name, c.captureId = id;
    writer.add(c);
    return correlation++;
  };
  auto work = [&](int64_t s, int64_t e, int32_t stream, const std::string& name,
                  std::optional<int64_t> corr) {
    store::Kernel k;
    k.start = at(s), k.end = at(e), k.deviceId = 0, k.streamId = stream;
    k.correlationId = corr, k.globalPid = store::global_pid(pid);
    k.demangledName = name, k.captureId = id;
    writer.add(k);
  };
  work(20, 60, 3, "mtia_gemm_fwd", call(0, 10, kMtiaLaunch));
  work(60, 80, 3, "dma_h2d_copy", call(12, 18, kMtiaLaunch));
  work(90, 100, 3, "mtia_relu", call(30, 40, kMtiaLaunch));
  call(41, 45, "mtia_runtime::synchronize");
  work(200, 210, 4, "mtia_orphan", std::nullopt);
  writer.finish();
  return path;
}

CaptureData load_mtia(const test_support::TempDir& dir) {
  store::Reader reader(write_mtia_capture(dir));
  return load_capture(reader, resolve_capture_id(reader, std::nullopt));
}

TEST(Accelerator, MtiaLaunchStatisticsAsHta) {
  test_support::TempDir dir;
  const CaptureData data = load_mtia(dir);
  const LaunchStatistics stats = launch_statistics(data);
  ASSERT_EQ(stats.launches.size(), 3u) << "HTA counts MTIA's runFunction launches";
  // Delays: 20-10, 60-18, 90-40 µs -> mean 34 µs.
  EXPECT_DOUBLE_EQ(stats.launch_delay_mean_ns, double(us(34)));
  EXPECT_EQ(stats.launch_delay_max_ns, us(50));
}

TEST(Accelerator, MtiaQueueLengthPerStream) {
  test_support::TempDir dir;
  const CaptureData data = load_mtia(dir);
  const auto series = queue_length_time_series(data);
  ASSERT_EQ(series.size(), 1u) << "stream 4's work has no launch call";
  EXPECT_EQ(series[0].stream, 3);
  // +1@0 +1@12 -1@20 +1@30 -1@60 -1@90
  const std::vector<int64_t> expected = {1, 2, 1, 2, 1, 0};
  ASSERT_EQ(series[0].points.size(), expected.size());
  for (size_t k = 0; k < expected.size(); ++k)
    EXPECT_EQ(series[0].points[k].queue_length, expected[k]) << "point " << k;
  EXPECT_EQ(series[0].points[1].time_ns, kBase + us(12));
  const QueueLengthSummary s = summarize(series[0]);
  EXPECT_EQ(s.count, 6);
  EXPECT_DOUBLE_EQ(s.mean, 7.0 / 6.0);
  EXPECT_DOUBLE_EQ(s.max, 2.0);
  EXPECT_DOUBLE_EQ(s.p50, 1.0);
  EXPECT_DOUBLE_EQ(s.p75, 1.75);  // pandas linear: position 3.75 of [0,1,1,1,2,2]
  ASSERT_TRUE(s.time_weighted_mean.has_value());
  EXPECT_DOUBLE_EQ(*s.time_weighted_mean, 128.0 / 90.0);
}

TEST(Accelerator, MtiaKernelTypesIdleAndTemporalBreakdown) {
  test_support::TempDir dir;
  const CaptureData data = load_mtia(dir);
  const auto rows = device_metrics(data);
  ASSERT_EQ(rows.size(), 1u);
  const KernelTimeByType& k = rows[0].kernel_time_by_type;
  EXPECT_EQ(k.computation_ns, us(40 + 10 + 10));  // gemm, relu, the orphan
  EXPECT_EQ(k.memory_ns, us(20)) << "HTA's MEMORY type includes ^dma";
  EXPECT_EQ(rows[0].kernel_type_states.at("COMPUTATION"), us(60));
  EXPECT_EQ(rows[0].kernel_type_states.at("MEMORY"), us(20));

  bool stream3 = false;
  for (const auto& idle : idle_time_breakdown(data)) {
    if (idle.stream != 3) continue;
    stream3 = true;
    EXPECT_EQ(idle.kernel_wait_ns, us(10));  // 60->60 (0) and 80->90 (10), both enqueued
    EXPECT_EQ(idle.kernel_wait_count, 2);
    EXPECT_EQ(idle.host_wait_ns, 0);
  }
  EXPECT_TRUE(stream3);
  const auto temporal = temporal_breakdown(data);
  ASSERT_EQ(temporal.size(), 1u);
  EXPECT_EQ(temporal[0].span_ns, us(190));
  EXPECT_EQ(temporal[0].idle_ns, us(190 - (40 + 20 + 10 + 10)));
}

TEST(KernelTypes, HtaNameRules) {
  EXPECT_EQ(hta_kernel_type("ncclDevKernel_AllReduce"), HtaKernelType::communication);
  EXPECT_EQ(hta_kernel_type("Memcpy HtoD (Pageable -> Device)"), HtaKernelType::memory);
  EXPECT_EQ(hta_kernel_type("Memset (Device)"), HtaKernelType::memory);
  EXPECT_EQ(hta_kernel_type("dma_copy"), HtaKernelType::memory);
  EXPECT_EQ(hta_kernel_type("Stream Sync"), HtaKernelType::other);
  EXPECT_EQ(hta_kernel_type("void fooMemcpyKernel"), HtaKernelType::other);
  EXPECT_EQ(hta_kernel_type("Stream Wait Event"), HtaKernelType::computation);
  EXPECT_EQ(hta_kernel_type("nccl_helper"), HtaKernelType::computation);
  // re.match's '.' stops at a newline: "Sync" on the second line does not count.
  EXPECT_EQ(hta_kernel_type("gemm\nSync"), HtaKernelType::computation);
}

// Three types overlapping: compute [0,100), nccl [50,150), memcpy [90,200) (µs).
TEST(KernelTypes, StatesPartitionTheUnion) {
  CaptureBuilder b;
  b.kernel(us(0), us(100)).kernel(us(50), us(150), 8, "ncclKernel_AllReduce");
  b.memcpy(us(90), us(200), 9, store::kMemcpyHtoD, store::kMemPageable, store::kMemDevice, 64);
  const CaptureData data = b.build();
  const auto states = kernel_type_states(data, 0);
  EXPECT_EQ(states.at("COMPUTATION"), us(50));
  EXPECT_EQ(states.at("COMPUTATION overlapping COMMUNICATION"), us(40));
  EXPECT_EQ(states.at("COMPUTATION overlapping COMMUNICATION overlapping MEMORY"), us(10));
  EXPECT_EQ(states.at("COMMUNICATION overlapping MEMORY"), us(50));
  EXPECT_EQ(states.at("MEMORY"), us(50));
  EXPECT_EQ(states.size(), 5u);
  const KernelTimeByType k = kernel_time_by_type(data, 0);
  EXPECT_EQ(k.computation_ns, us(100));
  EXPECT_EQ(k.communication_ns, us(100));
  EXPECT_EQ(k.memory_ns, us(110));
}

// HTA drops GPU work launched in the last ProfilerStep before every analysis, the kernel
// breakdown included; the unfiltered figure keeps it.
TEST(KernelTypes, LastStepFilterAppliesFirst) {
  CaptureBuilder b;
  b.step(1, us(0), us(100)).step(2, us(100), us(200)).step(3, us(200), us(300));
  b.kernel(us(10), us(50), 7, "gemm", 0, std::pair{us(1), us(2)});
  b.kernel(us(150), us(180), 7, "gemm", 0, std::pair{us(120), us(121)});
  b.kernel(us(250), us(290), 7, "gemm", 0, std::pair{us(210), us(211)});  // step 3: dropped
  const CaptureData data = b.build();
  EXPECT_EQ(kernel_time_by_type(data, 0).computation_ns, us(40 + 30));
  EXPECT_EQ(kernel_time_by_type(data, 0, false).computation_ns, us(40 + 30 + 40));
  const auto rows = device_metrics(data);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel_time_by_type.computation_ns, us(70));
  EXPECT_EQ(rows[0].kernel_time_by_type_unfiltered.computation_ns, us(110));
  // The queue length drops the step-3 launch too.
  const auto series = queue_length_time_series(data);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].points.size(), 4u);
}

}  // namespace
}  // namespace fleetscope::analyzer
