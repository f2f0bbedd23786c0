// HTA get_gpu_user_annotation_breakdown on the shared real traces with gpu_user_annotation events:
// per annotation name the sum, max, min, mean and standard deviation of its durations are HTA
// 0.5.0's own (tests/data/hta_reference/hta_reference_annotations.json, made by
// compute_annotation_reference.py with HTA's ns rounding off on exactly rebased copies), after
// HTA's last-step filter (both traces drop their last ProfilerStep).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/kernel_stats.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

class GpuAnnotationParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuAnnotationParity, PerNameStatisticsAsHta) {
  std::ifstream in(HTA_REFERENCE_ANNOTATIONS_JSON);
  ASSERT_TRUE(in) << "reference missing: " << HTA_REFERENCE_ANNOTATIONS_JSON;
  const json reference = json::parse(in);
  ASSERT_TRUE(reference.at("traces").contains(GetParam())) << GetParam();
  const json& hta = reference.at("traces").at(GetParam());
  ASSERT_FALSE(hta.empty());

  const CaptureData data =
      load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + GetParam());
  const AnnotationStats stats = gpu_user_annotation_stats(data);
  EXPECT_EQ(stats.others_names, 0) << "fewer names than HTA's num_kernels (1000)";
  std::map<std::string, KernelStat> ours;
  for (const KernelStat& k : stats.top) ours.emplace(k.name, k);
  EXPECT_EQ(ours.size(), hta.size());
  for (const json& row : hta) {
    const std::string name = row.at("name");
    SCOPED_TRACE(name);
    ASSERT_TRUE(ours.count(name)) << "annotation missing";
    const KernelStat& k = ours.at(name);
    // HTA works in µs parsed from the trace's decimal text (float64 after an exact rebase).
    EXPECT_NEAR(double(k.sum_ns) / 1e3, row.at("sum_us").get<double>(), 0.002);
    EXPECT_NEAR(double(k.max_ns) / 1e3, row.at("max_us").get<double>(), 0.002);
    EXPECT_NEAR(double(k.min_ns) / 1e3, row.at("min_us").get<double>(), 0.002);
    EXPECT_NEAR(k.mean_ns / 1e3, row.at("mean_us").get<double>(), 0.002);
    EXPECT_NEAR(k.std_ns / 1e3, row.at("std_us").get<double>(), 0.002);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedKinetoTraces, GpuAnnotationParity,
                         ::testing::Values("hta-ns_resolution_trace_rank-0.json.gz",
                                           "hta-nccl_parser_config_nccl_data.json.gz"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(4, info.param.find(".json") - 4);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace fleetscope::analyzer
