#include "fleetscope/sharer/fleet_packing.h"

#include <gtest/gtest.h>

#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

// One node with 2 GPUs; fractional pods of 500, 600, 400, 500 milli arrive and never leave.
//   first fit: 500 -> g0, 600 -> g1, 400 -> g0 (900), 500 fits nowhere.
//   best fit:  500 -> g0, 600 -> g1, 400 -> g1 (exactly full), 500 -> g0 (exactly full).
//   exclusive: 500 -> g0, 600 -> g1, the rest are rejected.
std::vector<Pod> four_pods() {
  std::vector<Pod> pods;
  int i = 0;
  for (int milli : {500, 600, 400, 500}) {
    pods.push_back(Pod{"p" + std::to_string(i), 1, milli, double(i), 100});
    ++i;
  }
  return pods;
}

const std::vector<GpuNode> kOneNode{{"n0", 2, "T4"}};

TEST(FleetPacking, BestFitPlacesWhatFirstFitFragments) {
  const auto best = simulate_packing(four_pods(), kOneNode, PackingStrategy::kBestFit);
  const auto first = simulate_packing(four_pods(), kOneNode, PackingStrategy::kFirstFit);
  const auto exclusive = simulate_packing(four_pods(), kOneNode, PackingStrategy::kExclusive);
  EXPECT_EQ(best.pods_placed, 4);
  EXPECT_EQ(best.pods_rejected, 0);
  EXPECT_EQ(first.pods_placed, 3);
  EXPECT_EQ(exclusive.pods_placed, 2);
  EXPECT_DOUBLE_EQ(best.fragmentation_at_peak, 1.0 - 1100.0 / 2000);  // peak first hit at 500+600
  EXPECT_EQ(best.gpus_used_peak, 2);
}

TEST(FleetPacking, UnboundedFleetCountsTheGpusNeeded) {
  const PackingOptions unbounded{true, 2};  // every pod stays; add 2-GPU nodes as needed
  EXPECT_EQ(simulate_packing(four_pods(), {}, PackingStrategy::kBestFit, unbounded).gpus_used_peak,
            2);
  EXPECT_EQ(simulate_packing(four_pods(), {}, PackingStrategy::kFirstFit, unbounded).gpus_used_peak,
            3);
  const auto exclusive = simulate_packing(four_pods(), {}, PackingStrategy::kExclusive, unbounded);
  EXPECT_EQ(exclusive.gpus_used_peak, 4);
  EXPECT_EQ(exclusive.total_gpus, 4);
  EXPECT_EQ(exclusive.pods_rejected, 0);
}

TEST(FleetPacking, DeparturesFreeGpus) {
  std::vector<Pod> pods{{"a", 1, 300, 0, 10}, {"b", 1, 300, 20, 30}};
  const auto result = simulate_packing(pods, kOneNode, PackingStrategy::kExclusive);
  EXPECT_EQ(result.gpus_used_peak, 1);
  EXPECT_DOUBLE_EQ(result.fragmentation_mean, 0.7);  // 300 of 1000 used whenever a GPU is busy
}

TEST(FleetPacking, WholeGpuPodsNeedOneNode) {
  const std::vector<GpuNode> nodes{{"big", 8, "V100"}, {"small", 2, "T4"}};
  std::vector<Pod> pods{{"four", 4, 1000, 0, 10}, {"two", 2, 1000, 1, 10}};
  const auto best = simulate_packing(pods, nodes, PackingStrategy::kBestFit);
  EXPECT_EQ(best.pods_placed, 2);
  // Best fit puts the 2-GPU pod on the node it fills exactly, keeping 4 GPUs of "big" together.
  EXPECT_EQ(best.nodes_used_peak, 2);
  EXPECT_EQ(best.gpus_used_peak, 6);
  const auto first = simulate_packing(pods, nodes, PackingStrategy::kFirstFit);
  EXPECT_EQ(first.nodes_used_peak, 1);  // first fit: both on "big"
  const auto too_big =
      simulate_packing({{"nine", 9, 1000, 0, 1}}, nodes, PackingStrategy::kBestFit);
  EXPECT_EQ(too_big.pods_rejected, 1);
}

TEST(FleetPacking, AlibabaTraceLoadsAndBestFitNeedsNoMoreGpusThanExclusive) {
  const auto pods = load_alibaba_pods(testing::jobs_data("alibaba2023_openb_pod_list_default.csv"));
  const auto nodes =
      load_alibaba_nodes(testing::jobs_data("alibaba2023_openb_node_list_gpu_node.csv"));
  EXPECT_EQ(nodes.size(), 1213u);
  EXPECT_GT(pods.size(), 7000u);
  const auto best = simulate_packing(pods, nodes, PackingStrategy::kBestFit);
  const auto exclusive = simulate_packing(pods, nodes, PackingStrategy::kExclusive);
  EXPECT_LE(best.pods_rejected, exclusive.pods_rejected);
  EXPECT_LT(best.fragmentation_mean, 1.0);
}

TEST(FleetPacking, BadPodLineIsReportedWithFileAndLine) {
  const auto path = testing::scratch_file(
      "pods.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,1000,1024,1,1500,,LS,Running,0,10,0\n");
  try {
    load_alibaba_pods(path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              path + ":2: expected gpu_milli in 1..1000, and 1000 for multi-GPU pods");
  }
}

}  // namespace
}  // namespace fleetscope::sharer
