#include "fleetscope/sharer/workload.h"

#include <gtest/gtest.h>

#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

using testing::jobs_data;
using testing::scratch_file;

TEST(SalusProfiles, OneProfilePerModelAndBatchSize) {
  const auto table = load_salus_profiles(jobs_data("salus_workloads.csv"));
  EXPECT_EQ(table.profiles.size(), 33u);  // 11 models x 3 batch sizes
}

TEST(SalusProfiles, IterationTimeExcludesStartUp) {
  const auto table = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto* vgg16 = table.find("vgg16", 100);
  ASSERT_NE(vgg16, nullptr);
  // Shortest run 76.735 s / 90 iterations, longest 617.567 s / 912 (the row mislabelled "1min").
  EXPECT_NEAR(vgg16->iteration_s, (617.567 - 76.735) / (912 - 90), 1e-9);
  EXPECT_NEAR(vgg16->startup_s, 76.735 - 90 * vgg16->iteration_s, 1e-9);
}

TEST(SalusProfiles, PersistentMemoryIsTheBatchIndependentIntercept) {
  const auto table = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto* resnet50 = table.find("resnet50", 50);
  ASSERT_NE(resnet50, nullptr);
  // Least squares over (25, 2116), (50, 4008.2), (75, 5914.6) MiB: intercept 214.33 MiB.
  EXPECT_NEAR(static_cast<double>(resnet50->persistent_bytes) / kMiB, 214.333, 0.01);
  EXPECT_EQ(resnet50->persistent_bytes + resnet50->ephemeral_bytes, resnet50->peak_bytes);
  for (const auto& profile : table.profiles) {
    EXPECT_GE(profile.persistent_bytes, 0) << profile.model;
    EXPECT_GE(profile.ephemeral_bytes, 0) << profile.model;
  }
}

TEST(TiresiasTrace, SixtyJobsWithProfilesAttached) {
  const auto profiles = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto jobs = load_tiresias_jobs(jobs_data("tiresias_60_job.csv"), profiles);
  ASSERT_EQ(jobs.size(), 60u);
  EXPECT_EQ(jobs[0].model, "vgg19");
  EXPECT_EQ(jobs[0].iterations, 606);
  EXPECT_EQ(jobs[0].batch_size, 25);  // 164 s / 606 = 0.27 s: closest to vgg19 at batch 25
  EXPECT_EQ(jobs[1].num_gpu, 8);
  EXPECT_DOUBLE_EQ(jobs[59].submit_s, 1779);
}

TEST(TiresiasTrace, MissingColumnNamesFileAndColumn) {
  const auto profiles = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto path = scratch_file("jobs.csv", "job_id,num_gpu,submit_time,iterations,duration\n");
  try {
    load_tiresias_jobs(path, profiles);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(path + ":1: expected a column named 'model_name'"),
              std::string::npos)
        << error.what();
  }
}

TEST(TiresiasTrace, MalformedLineNamesFileLineAndExpectation) {
  const auto profiles = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto path =
      scratch_file("jobs.csv",
                   "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                   "0,1,0,10,vgg19,10,1\n"
                   "1,1,abc,10,vgg19,10,1\n");
  try {
    load_tiresias_jobs(path, profiles);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(
        std::string(error.what()),
        path + ":3: column 3 (submit_time): expected submit_time as a finite number, found 'abc'");
  }
}

TEST(TiresiasTrace, JobWiderThanTheClusterNamesItsLine) {
  const auto profiles = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto path = scratch_file("jobs.csv",
                                 "job_id,num_gpu,submit_time,iterations,model_name,duration\n"
                                 "0,4,0,10,vgg19,10\n"
                                 "1,8,0,10,vgg19,10\n");
  EXPECT_EQ(load_tiresias_jobs(path, profiles, 8).size(), 2u);
  try {
    load_tiresias_jobs(path, profiles, 4);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              path +
                  ":3: column 2 (num_gpu): expected num_gpu at most 4 GPUs (the simulated "
                  "cluster's size), found '8'");
  }
}

TEST(TiresiasTrace, UnknownModelIsReported) {
  const auto profiles = load_salus_profiles(jobs_data("salus_workloads.csv"));
  const auto path = scratch_file("jobs.csv",
                                 "job_id,num_gpu,submit_time,iterations,model_name,duration\n"
                                 "0,1,0,10,bert,10\n");
  EXPECT_THROW(load_tiresias_jobs(path, profiles), std::runtime_error);
}

}  // namespace
}  // namespace fleetscope::sharer
