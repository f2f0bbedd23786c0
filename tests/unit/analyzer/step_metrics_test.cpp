// Per-iteration metrics: the plugin's device-side steps, its step-time breakdown in priority
// order, and memory per iteration (consolidation.h's definitions).
#include "fleetscope/analyzer/step_metrics.h"

#include <gtest/gtest.h>

#include "capture_builder.h"

namespace fleetscope::analyzer {
namespace {

using testing::CaptureBuilder;

void add_memset(CaptureData& d, int64_t start, int64_t end) {
  auto& g = d.gpu;
  g.start.push_back(start), g.end.push_back(end), g.device.push_back(0), g.stream.push_back(7);
  g.correlation.push_back(-1), g.global_pid.push_back(-1);
  g.name_id.push_back(d.intern("Memset (Device)")), g.kind.push_back(GpuEventKind::memset);
  g.work_class.push_back(WorkClass::memory), g.bytes.push_back(64);
  g.copy_kind.push_back(-1), g.src_kind.push_back(-1), g.dst_kind.push_back(-1);
}

// One step [0,100) ns, each instant charged to the first active role:
//   kernel [10,30) 20 · memcpy [20,40) → [30,40) 10 · memset [35,45) → [40,45) 5
//   communication: NCCL kernel [50,60) + nccl:all_reduce op [92,96) = 14
//   runtime cudaLaunchKernel [0,15) → [0,10) 10 (cuLaunchKernel [90,95) is a driver call: no role)
//   DataLoader [60,80) 20 · CPU op aten::add [70,90) → [80,90) 10 (ProfilerStep#1 is no CPU op)
//   other: [45,50) + [90,92) + [96,100) = 11
TEST(StepBreakdown, PluginPriorityOrder) {
  CaptureBuilder b;
  b.step(1, 0, 100);
  b.kernel(10, 30);
  b.memcpy(20, 40, 7, store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice, 64);
  b.kernel(50, 60, 9, "ncclKernel_AllReduce_RING_LL_Sum_float");
  b.runtime(0, 15, "cudaLaunchKernel", -1);
  b.runtime(90, 95, "cuLaunchKernel", -1);
  b.dataloader(60, 80);
  b.cpu_op(70, 90, "aten::add");
  b.cpu_op(0, 100, "ProfilerStep#1");
  b.cpu_op(92, 96, "nccl:all_reduce");
  add_memset(b.raw(), 35, 45);
  auto rows = step_breakdown(b.build());
  ASSERT_EQ(rows.size(), 1u);
  const StepBreakdown& r = rows[0];
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.step_ns, 100);
  EXPECT_EQ(r.kernel_ns, 20);
  EXPECT_EQ(r.memcpy_ns, 10);
  EXPECT_EQ(r.memset_ns, 5);
  EXPECT_EQ(r.communication_ns, 14);
  EXPECT_EQ(r.runtime_ns, 10);
  EXPECT_EQ(r.dataloader_ns, 20);
  EXPECT_EQ(r.cpu_op_ns, 10);
  EXPECT_EQ(r.other_ns, 11);
  EXPECT_EQ(r.kernel_ns + r.memcpy_ns + r.memset_ns + r.communication_ns + r.runtime_ns +
                r.dataloader_ns + r.cpu_op_ns + r.other_ns,
            r.step_ns);
}

// Host steps [0,100) [100,200) [200,300). A kernel [20,40) with no launch call ends before the
// first launched GPU work (starts at 50), so step 1 starts at 40. K1 (call in step 1) runs
// [50,150): step 1 ends at 150 and step 2 starts there. K2 (call in step 2) runs [160,180): step 2
// keeps its host end 200. Step 3 launches nothing: dropped from the overview as a tail step.
TEST(PluginSteps, MoveToTheDeviceSideAndDropEmptyTailSteps) {
  CaptureBuilder b;
  b.step(1, 0, 100).step(2, 100, 200).step(3, 200, 300);
  b.kernel(20, 40);
  b.kernel(50, 150, 7, "gemm", 0, std::pair<int64_t, int64_t>{10, 20});
  b.kernel(160, 180, 7, "gemm", 0, std::pair<int64_t, int64_t>{110, 120});
  PluginSteps steps = plugin_steps(b.build());
  ASSERT_EQ(steps.steps.size(), 3u);
  EXPECT_TRUE(steps.device_adjusted);
  EXPECT_EQ(steps.steps[0].window, (Interval{40, 150}));
  EXPECT_EQ(steps.steps[1].window, (Interval{150, 200}));
  EXPECT_EQ(steps.steps[2].window, (Interval{200, 300}));
  EXPECT_EQ(steps.steps[0].launched_gpu_events, 1);
  EXPECT_TRUE(steps.steps[1].in_overview);
  EXPECT_FALSE(steps.steps[2].in_overview);
  EXPECT_EQ(steps.span(), (Interval{40, 200}));
}

TEST(PluginSteps, LastStepWithUnder80PercentOfThePreviousLaunchesIsDropped) {
  CaptureBuilder b;
  b.step(1, 0, 100).step(2, 100, 200);
  for (int64_t k = 0; k < 5; ++k)
    b.kernel(10 + k * 10, 15 + k * 10, 7, "gemm", 0, std::pair<int64_t, int64_t>{k, k + 1});
  for (int64_t k = 0; k < 3; ++k)
    b.kernel(110 + k * 10, 115 + k * 10, 7, "gemm", 0,
             std::pair<int64_t, int64_t>{100 + k, 101 + k});
  PluginSteps steps = plugin_steps(b.build());
  EXPECT_TRUE(steps.steps[0].in_overview);
  EXPECT_FALSE(steps.steps[1].in_overview);  // 5 · 0.8 > 3
  EXPECT_EQ(steps.span(), (Interval{0, 100}));
}

TEST(PluginSteps, WithoutIterationsOneStepOverTheCpuOps) {
  CaptureBuilder b;
  b.kernel(0, 10).cpu_op(5, 50).cpu_op(30, 80);
  PluginSteps steps = plugin_steps(b.build());
  ASSERT_EQ(steps.steps.size(), 1u);
  EXPECT_TRUE(steps.from_cpu_ops);
  EXPECT_EQ(steps.steps[0].step, 0);
  EXPECT_EQ(steps.span(), (Interval{5, 80}));
  CaptureBuilder none;
  none.kernel(0, 10);
  EXPECT_FALSE(plugin_steps(none.build()).span().has_value());
}

store::MemoryEvent mem(int64_t ts, int32_t device, int64_t bytes) {
  store::MemoryEvent e;
  e.ts = ts;
  e.deviceId = device;
  e.bytes = bytes;
  return e;
}

// Device 0: +100 @10, −50 @50 | +200 @110, −200 @150, +30 @160; a host event is ignored.
// Iteration 1 [0,100): baseline 0, peak 100. Iteration 2 [100,200): baseline 50, peak 250.
TEST(MemoryByDevice, PerIterationBaselinePeakAndTheSharersPT) {
  CaptureBuilder b;
  b.kernel(0, 10).step(1, 0, 100).step(2, 100, 200);
  CaptureData& raw = b.raw();
  for (auto e : {mem(10, 0, 100), mem(50, 0, -50), mem(110, 0, 200), mem(120, -1, 999),
                 mem(150, 0, -200), mem(160, 0, 30)})
    raw.memory.push_back(e);
  CaptureData data = b.build();
  auto rows = memory_by_device(data);
  ASSERT_EQ(rows.size(), 1u);
  const DeviceMemory& m = rows[0];
  EXPECT_EQ(m.device, 0);
  EXPECT_EQ(m.events, 5);
  ASSERT_EQ(m.iterations.size(), 2u);
  EXPECT_EQ(m.iterations[0].baseline_bytes, 0);
  EXPECT_EQ(m.iterations[0].peak_bytes, 100);
  EXPECT_EQ(m.iterations[0].ephemeral_peak_bytes, 100);
  EXPECT_EQ(m.iterations[1].baseline_bytes, 50);
  EXPECT_EQ(m.iterations[1].peak_bytes, 250);
  EXPECT_EQ(m.iterations[1].ephemeral_peak_bytes, 200);
  EXPECT_EQ(m.peak_bytes, 250);
  EXPECT_EQ(m.baseline_bytes, 0);
  EXPECT_EQ(m.persistent_bytes, 50);
  EXPECT_EQ(m.ephemeral_peak_bytes, 200);
  EXPECT_DOUBLE_EQ(m.ephemeral_peak_stddev_bytes, 50.0);
  // The same P and T as consolidation.h computes for the sharer.
  std::vector<store::MemoryEvent> device0;
  for (const auto& e : data.memory)
    if (e.deviceId == 0) device0.push_back(e);
  MemoryFootprint fp = memory_footprint(device0, {{0, 100}, {100, 200}});
  EXPECT_EQ(fp.persistent_bytes, m.persistent_bytes);
  EXPECT_EQ(fp.ephemeral_peak_bytes, m.ephemeral_peak_bytes);
}

TEST(MemoryByDevice, DeviceWithoutMemoryEventsIsUnmeasured) {
  CaptureBuilder b;
  b.kernel(0, 10);
  auto rows = memory_by_device(b.build());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].events, 0);
  EXPECT_TRUE(rows[0].iterations.empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
