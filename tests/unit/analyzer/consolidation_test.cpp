#include "fleetscope/analyzer/consolidation.h"

#include <gtest/gtest.h>

#include "db_fixture.h"

namespace fleetscope::analyzer {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

store::MemoryEvent ev(int64_t ts, int64_t bytes, std::optional<int64_t> total = std::nullopt) {
  store::MemoryEvent e;
  e.ts = ts, e.bytes = bytes, e.total_allocated = total;
  return e;
}

TEST(MemoryFootprint, PersistentAndEphemeralPerIteration) {
  // 100 MiB before the steps; step 1 peaks at +30, step 2 at +50 and leaks 10.
  std::vector<store::MemoryEvent> events = {ev(0, 100 * MiB), ev(15, 30 * MiB), ev(18, -30 * MiB),
                                            ev(25, 50 * MiB), ev(28, -40 * MiB)};
  auto fp = memory_footprint(events, {{10, 20}, {20, 30}});
  EXPECT_EQ(fp.persistent_bytes, 100 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_bytes, 50 * MiB);
  EXPECT_EQ(fp.peak_bytes, 150 * MiB);
  EXPECT_DOUBLE_EQ(fp.ephemeral_peak_stddev_bytes, 10.0 * MiB);  // peaks 30 and 50 MiB
  // With a third step the leak shows in P.
  fp = memory_footprint(events, {{10, 20}, {20, 30}, {30, 40}});
  EXPECT_EQ(fp.persistent_bytes, 110 * MiB);
}

TEST(MemoryFootprint, UsesReportedTotalsAndWorksWithoutIterations) {
  // total_allocated includes memory allocated before the capture (500 MiB).
  std::vector<store::MemoryEvent> events = {ev(0, 10 * MiB, 510 * MiB),
                                            ev(5, -10 * MiB, 500 * MiB)};
  auto fp = memory_footprint(events, {});
  EXPECT_EQ(fp.persistent_bytes, 500 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_bytes, 10 * MiB);
  fp = memory_footprint(events, {{-1, 10}});
  EXPECT_EQ(fp.persistent_bytes, 500 * MiB);  // level before the first event: 510 - 10
  EXPECT_EQ(fp.ephemeral_peak_bytes, 10 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_stddev_bytes, -1.0);  // one iteration
  EXPECT_EQ(memory_footprint({}, {}).peak_bytes, 0);
}

TEST(ConsolidationCandidates, FromDatabase) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  auto list = consolidation_candidates(reader);
  ASSERT_EQ(list.size(), 1u);
  const auto& c = list[0];
  EXPECT_EQ(c.capture_id, ids.capture);
  EXPECT_EQ(c.workflow_id, ids.workflow);
  EXPECT_EQ(c.workflow, "resnet-train");
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.labels.at("priority"), "batch");
  EXPECT_EQ(c.gpu_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(c.gpu_memory_bytes, int64_t{40} << 30);
  EXPECT_TRUE(c.memory_measured);
  EXPECT_EQ(c.persistent_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.ephemeral_peak_bytes, 512 * MiB);
  EXPECT_DOUBLE_EQ(c.ephemeral_peak_stddev_bytes, 128.0 * MiB);  // peaks 256 and 512 MiB
  EXPECT_EQ(c.iterations, 2);
  EXPECT_EQ(c.iteration_ns, 250'000);
  EXPECT_DOUBLE_EQ(c.utilization, 0.76);
  EXPECT_FALSE(c.co_location_candidate);  // 76 % busy
  ConsolidationOptions loose;
  loose.max_utilization = 0.9;
  auto relaxed = consolidation_candidates(reader, loose);
  EXPECT_TRUE(relaxed.at(0).co_location_candidate);
}

}  // namespace
}  // namespace fleetscope::analyzer
