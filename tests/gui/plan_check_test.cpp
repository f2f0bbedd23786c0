// Apply's host check: a plan goes only to a daemon whose devices include every GPU it names.
#include <gtest/gtest.h>

#include "plan_check.h"

namespace fleetscope::gui {
namespace {

sharer::ConsolidationPlan plan_on(std::vector<std::string> gpus) {
  sharer::ConsolidationPlan plan;
  for (auto& g : gpus) plan.gpus.push_back({g, 80LL << 30, 0, {}});
  return plan;
}

DaemonStatusView host_with(std::vector<int32_t> indexes) {
  DaemonStatusView host;
  host.hostname = "node-a";
  for (int32_t i : indexes) host.devices.push_back({i, "H100", "GPU-" + std::to_string(i)});
  return host;
}

TEST(PlanCheck, DeviceIndexFromThePlansGpuName) {
  EXPECT_EQ(plan_gpu_index("k.db#capture1/gpu0 (NVIDIA H100)"), 0);
  EXPECT_EQ(plan_gpu_index("host.db#capture12/gpu7"), 7);
  EXPECT_FALSE(plan_gpu_index("gpu-without-index"));
  EXPECT_FALSE(plan_gpu_index("a/gpuX"));
}

TEST(PlanCheck, APlanGoesOnlyToAHostThatHasItsGpus) {
  const auto plan = plan_on({"k.db#capture1/gpu0 (H100)", "k.db#capture1/gpu1 (H100)"});
  EXPECT_EQ(plan_host_mismatch(plan, host_with({0, 1})), "");
  // The reported defect: a daemon with no GPU was handed a plan naming gpu0.
  EXPECT_NE(plan_host_mismatch(plan, host_with({})).find("reports no GPU"), std::string::npos);
  const std::string one = plan_host_mismatch(plan, host_with({0}));
  EXPECT_NE(one.find("'k.db#capture1/gpu1 (H100)' is not a GPU of node-a"), std::string::npos)
      << one;
  EXPECT_NE(plan_host_mismatch(plan_on({"somewhere"}), host_with({0})).find("no device index"),
            std::string::npos);
}

TEST(PlanCheck, ChangesListEveryPlacedJobAndFreedGpu) {
  sharer::ConsolidationPlan plan;
  sharer::PlannedJob a;
  a.job_id = "wa", a.to_gpu = "g0", a.lane_id = 1, a.moved = false, a.predicted_slowdown = 1.1;
  sharer::PlannedJob b = a;
  b.job_id = "wb", b.moved = true;
  sharer::PlannedJob c;
  c.job_id = "wc";  // not placed
  plan.jobs = {a, b, c};
  plan.gpus_freed = {"g1"};
  EXPECT_EQ(plan_changes(plan),
            (std::vector<std::string>{"wa stays on g0, lane 1 (predicted slowdown 1.10×)",
                                      "wb moves to g0, lane 1 (predicted slowdown 1.10×)",
                                      "g1 is freed"}));
}

}  // namespace
}  // namespace fleetscope::gui
