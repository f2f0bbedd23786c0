// Critical path (analyzer/critical_path.h) on a hand-built iteration whose graph and longest path
// are worked out in the comments, edge by edge, with HTA's rules.
#include <gtest/gtest.h>

#include "capture_builder.h"
#include "fleetscope/analyzer/critical_path.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;

// One thread:  aten::mm [0, 100] > cudaLaunchKernel [10, 20] -> K1 on stream 7 [30, 80]
//              aten::relu [110, 130] > cudaLaunchKernel [115, 120] -> K2 on stream 7 [125, 300]
//              cudaStreamSynchronize [140, 310], its Stream Sync wait on stream 7 [140, 310]
// CPU edges:   mm.s->l1.s 10 (mm), l1.s->l1.e 10 (l1), l1.e->mm.e 80 (mm), mm.e->relu.s dep,
//              relu.s->l2.s 5 (relu), l2.s->l2.e 5 (l2), l2.e->relu.e 10 (relu), relu.e->sync.s
//              dep, sync.s->sync.e 0 (a blocking call).
// GPU edges:   both kernels found their queue empty: launch delays l1.s->K1.s 20, l2.s->K2.s 10;
//              K1 50, K2 175; K2.e -> sync.e (Stream Sync) 0.
// Longest:     mm.s 10 l1.s 10 l1.e 80 mm.e 0 relu.s 5 l2.s 10 K2.s 175 K2.e 0 sync.e = 290 µs
//              (the CPU-only path is 120 µs).
CaptureData one_iteration() {
  testing::CaptureBuilder b;
  CaptureData& raw = b.raw();
  const int64_t tid = store::global_tid(100, 100);
  raw.cpu_ops.push_back({us(0), us(100), raw.intern("aten::mm"), tid, true});
  raw.cpu_ops.push_back({us(110), us(130), raw.intern("aten::relu"), tid, true});
  // An annotation spanning everything: not an operator, so not in the graph (HTA: cat cpu_op).
  raw.cpu_ops.push_back({us(0), us(400), raw.intern("## forward ##"), tid, false});
  b.kernel(us(30), us(80), 7, "K1", 0, std::pair{us(10), us(20)});
  b.kernel(us(125), us(300), 7, "K2", 0, std::pair{us(115), us(120)});
  b.runtime(us(140), us(310), "cudaStreamSynchronize", 99);
  GpuSyncs& syncs = raw.gpu_syncs;
  syncs.start.push_back(us(140));
  syncs.end.push_back(us(310));
  syncs.device.push_back(0);
  syncs.stream.push_back(7);
  syncs.name_id.push_back(raw.intern("Stream Sync"));
  syncs.work_class.push_back(WorkClass::synchronization);
  syncs.correlation.push_back(99);
  return b.build();
}

TEST(CriticalPath, LongestPathThroughLaunchKernelAndSync) {
  const CaptureData data = one_iteration();
  EXPECT_FALSE(critical_path(data).computed);  // no iteration: nothing by default, as HTA
  CriticalPathOptions whole;
  whole.whole_capture = true;
  const CriticalPath cp = critical_path(data, whole);
  ASSERT_TRUE(cp.computed) << cp.not_computed_reason;
  EXPECT_FALSE(cp.step);
  EXPECT_EQ(cp.length_ns, us(290));
  // 5 events (2 ops, 3 calls) + 2 kernels, two nodes each; 9 CPU edges, 5 GPU ones.
  EXPECT_EQ(cp.nodes, 14);
  EXPECT_EQ(cp.edges, 14);
  // The path ends at K2's end: the zero-weight sync edge after it adds nothing, and the first
  // node of greatest length wins (networkx.dag_longest_path does the same).
  ASSERT_EQ(cp.path.size(), 7u);
  EXPECT_EQ(cp.path.front().start_ns, 0);
  EXPECT_EQ(cp.path.back().end_ns, us(300));
  EXPECT_EQ(cp.path[3].type, CriticalEdgeType::dependency);
  EXPECT_EQ(cp.path[5].type, CriticalEdgeType::kernel_launch_delay);
  EXPECT_EQ(cp.path[6].name, "K2");
  EXPECT_EQ(cp.path[6].device, 0);
  EXPECT_EQ(cp.path[6].stream, 7);

  EXPECT_EQ(cp.by_bound.at("cpu_bound"), us(105));
  EXPECT_EQ(cp.by_bound.at("gpu_kernel_launch_overhead"), us(10));
  EXPECT_EQ(cp.by_bound.at("gpu_compute_bound"), us(175));
  EXPECT_EQ(cp.by_category.at("cpu_op"), us(95));
  EXPECT_EQ(cp.by_category.at("cuda_runtime"), us(10));
  EXPECT_EQ(cp.by_category.at("kernel"), us(175));
  EXPECT_EQ(cp.by_edge_type.at("critical_path_dependency"), 0);

  ASSERT_GE(cp.top_ops.size(), 2u);
  EXPECT_EQ(cp.top_ops[0].name, "K2");
  EXPECT_EQ(cp.top_ops[0].on_path_ns, us(175));
  EXPECT_EQ(cp.top_ops[1].name, "aten::mm");
  EXPECT_EQ(cp.top_ops[1].on_path_ns, us(90));

  // K2 twice as fast: 115 + 87.5 = 202.5 µs, still above the CPU path's 120.
  ASSERT_FALSE(cp.what_if.empty());
  EXPECT_EQ(cp.what_if[0].name, "K2");
  EXPECT_EQ(cp.what_if[0].new_length_ns, 202'500);
  EXPECT_NEAR(cp.what_if[0].path_shorter_pct, 100.0 * 87.5 / 290.0, 1e-9);
}

TEST(CriticalPath, QueuedKernelWaitsForThePreviousOne) {
  // Both launched before K1 starts, so K2 queues behind K1: a kernel-kernel gap edge, not a
  // launch edge. K1 itself gets no launch edge either (K2 was still queued when it started: HTA
  // wants queue lengths 1 and 0), so the path starts at K1: 50 + gap 10 + 10.
  testing::CaptureBuilder b;
  b.kernel(us(30), us(80), 7, "K1", 0, std::pair{us(10), us(12)});
  b.kernel(us(90), us(100), 7, "K2", 0, std::pair{us(14), us(16)});
  CriticalPathOptions whole;
  whole.whole_capture = true;
  const CriticalPath cp = critical_path(b.build(), whole);
  ASSERT_TRUE(cp.computed) << cp.not_computed_reason;
  EXPECT_EQ(cp.length_ns, us(70));
  EXPECT_EQ(cp.path.front().start_ns, us(30));
  EXPECT_EQ(cp.by_bound.at("gpu_kernel_kernel_overhead"), us(10));
  EXPECT_EQ(cp.by_category.at("kernel_gap"), us(10));
}

TEST(CriticalPath, ChoosesTheIterationAndSaysWhenItCannot) {
  testing::CaptureBuilder b;
  b.kernel(us(30), us(80), 7, "K1", 0, std::pair{us(10), us(20)});
  b.kernel(us(230), us(280), 7, "K1", 0, std::pair{us(210), us(220)});
  b.step(5, us(0), us(200)).step(6, us(200), us(400));
  const CaptureData data = b.build();
  CriticalPathOptions options;
  options.step = 6;
  const CriticalPath cp = critical_path(data, options);
  ASSERT_TRUE(cp.computed);
  EXPECT_EQ(cp.step, 6);
  EXPECT_EQ(cp.window.begin, us(200));
  // The last step: its queue lengths are kept (see the header). Launch 210 -> kernel 230, 50 long.
  EXPECT_EQ(cp.length_ns, us(70));

  options.step = 9;
  const CriticalPath missing = critical_path(data, options);
  EXPECT_FALSE(missing.computed);
  EXPECT_NE(missing.not_computed_reason.find("step 9"), std::string::npos);

  EXPECT_FALSE(critical_path(testing::CaptureBuilder().build()).computed);
}

}  // namespace
}  // namespace fleetscope::analyzer
