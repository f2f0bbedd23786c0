// `share plan DB`: the analyzer's consolidation candidates reach the planner with everything the
// analyzer measured, the per-iteration variation of T included (it used to be dropped, so the
// planner always used its 2 % prior).

#include <gtest/gtest.h>

#include "db_fixture.h"
#include "fleetscope/cli/integrations.h"
#include "temp_dir.h"

namespace fleetscope::cli {
namespace {

TEST(CandidateLoader, CopiesTheMeasuredEphemeralDeviation) {
  fleetscope::test_support::TempDir dir;
  analyzer::testing::write_shared_case(dir.file("t.db"));
  const auto jobs = job_profiles_from_database(dir.file("t.db"));
  ASSERT_EQ(jobs.size(), 1u);
  // The fixture's two iterations peak at 256 and 512 MiB of ephemeral memory.
  EXPECT_DOUBLE_EQ(jobs[0].peak_stddev_bytes, 128.0 * 1024 * 1024);
  EXPECT_EQ(jobs[0].persistent_bytes, int64_t{1} << 30);
  EXPECT_EQ(jobs[0].ephemeral_peak_bytes, 512 * int64_t{1} << 20);
}

}  // namespace
}  // namespace fleetscope::cli
