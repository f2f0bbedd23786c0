// GPU utilization is one definition (analyzer/gpu_utilization.h): the per-capture figure, a
// job's figure, the fleet ranking, the diff and the consolidation candidates must all agree on
// one capture.
#include <gtest/gtest.h>

#include "capture_builder.h"
#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/diff.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;

TEST(GpuUtilizationDefinition, StepsSpanWhenRecordedElseWorkSpan) {
  const IntervalSet work = {{us(10), us(30)}, {us(50), us(60)}};
  const GpuUtilization over_work = measure_gpu_utilization(work, {us(10), us(60)}, std::nullopt);
  EXPECT_FALSE(over_work.window_is_steps);
  EXPECT_EQ(over_work.busy_ns, us(30));
  EXPECT_DOUBLE_EQ(over_work.utilization(), 30.0 / 50.0);
  // Steps from 0 to 100 µs: only the work inside counts, over the whole steps' span.
  const GpuUtilization over_steps =
      measure_gpu_utilization(work, {us(10), us(60)}, Interval{us(0), us(55)});
  EXPECT_TRUE(over_steps.window_is_steps);
  EXPECT_EQ(over_steps.busy_ns, us(25));
  EXPECT_DOUBLE_EQ(over_steps.utilization(), 25.0 / 55.0);
  EXPECT_DOUBLE_EQ(utilization_ratio(5, 0), 0.0);
  EXPECT_EQ(steps_span({{us(5), us(9)}, {us(1), us(3)}}), (Interval{us(1), us(9)}));
  EXPECT_FALSE(steps_span({}).has_value());
}

TEST(GpuUtilizationDefinition, CaptureFigureIsTheSumOverDevices) {
  testing::CaptureBuilder b;
  b.kernel(0, us(40), 7, "gemm", 0).kernel(us(90), us(100), 7, "gemm", 0);  // 50 of 100
  b.kernel(0, us(100), 7, "gemm", 1);                                       // 100 of 100
  const CaptureData data = b.build();
  ASSERT_EQ(gpu_utilization(data).size(), 2u);
  ASSERT_TRUE(capture_gpu_utilization(data).has_value());
  EXPECT_DOUBLE_EQ(*capture_gpu_utilization(data), 150.0 / 200.0);
  EXPECT_DOUBLE_EQ(summarize(data).utilization, 150.0 / 200.0);  // diff's figure
  EXPECT_FALSE(capture_gpu_utilization(testing::CaptureBuilder().build()).has_value());
}

// One capture, one job, with steps: the analyzer, the consolidation candidate and the fleet
// ranking read from a database all show the same GPU utilization.
TEST(GpuUtilizationDefinition, AnalyzerCandidatesAndFleetAgree) {
  testing::CaptureBuilder b;
  b.kernel(us(5), us(40)).kernel(us(60), us(90)).kernel(us(95), us(130));
  b.step(1, us(0), us(50)).step(2, us(50), us(100));
  const CaptureData data = b.build();
  const auto per_device = gpu_utilization(data);
  ASSERT_EQ(per_device.size(), 1u);
  EXPECT_TRUE(per_device[0].window_is_steps);
  EXPECT_DOUBLE_EQ(per_device[0].utilization(), 70.0 / 100.0);
  const auto candidates = consolidation_candidates(data);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_DOUBLE_EQ(candidates[0].utilization, per_device[0].utilization());

  testing::TempDir dir;
  const std::string path = dir.file("one.db");
  {
    store::Writer writer(store::Database::create(path));
    store::Capture c;
    c.source = "test";
    const int64_t capture = writer.add_capture(c);
    store::Workflow wf;
    wf.name = "train";
    const int64_t workflow = writer.add_workflow(wf);
    store::Process p;
    p.globalPid = store::global_pid(77), p.pid = 77, p.workflow_id = workflow;
    writer.upsert_process(p);
    for (size_t i = 0; i < data.gpu.size(); ++i) {
      store::Kernel k;
      k.start = data.gpu.start[i], k.end = data.gpu.end[i], k.streamId = 7;
      k.demangledName = "gemm", k.globalPid = store::global_pid(77), k.captureId = capture;
      writer.add(k);
    }
    for (const auto& it : data.iterations) {
      store::Iteration row = it;
      row.captureId = capture, row.globalPid = store::global_pid(77);
      writer.add(row);
    }
    writer.finish();
  }
  const auto ranking = rank_workflows({path});
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_DOUBLE_EQ(ranking[0].utilization(), per_device[0].utilization());
  EXPECT_EQ(ranking[0].span_ns, us(100));  // GPU-hours: the utilization's window
  EXPECT_EQ(ranking[0].idle_ns, us(30));
}

}  // namespace
}  // namespace fleetscope::analyzer
