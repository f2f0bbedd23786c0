// HTA get_gpu_user_annotation_breakdown on the shared real traces with gpu_user_annotation events:
// per annotation name the sum, max, min, mean and standard deviation of its durations are HTA
// 0.5.0's own (tests/data/hta_reference/hta_reference_annotations.json, made by
// compute_annotation_reference.py with HTA's ns rounding off on exactly rebased copies), after
// HTA's last-step filter (both traces drop their last ProfilerStep). And
// get_gpu_kernels_with_user_annotations: which GPU rows each annotation gets
// (hta_reference_kernel_annotations.json, compute_kernel_annotation_reference.py).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/kernel_annotations.h"
#include "fleetscope/analyzer/kernel_stats.h"
#include "fleetscope/analyzer/metrics.h"

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

// Per annotation name ("-1": none) the rows HTA gave it: how many, their durations' sum and their
// correlation ids' sum (which pins the very rows).
TEST_P(GpuAnnotationParity, KernelsWithUserAnnotationsAsHta) {
  std::ifstream in(HTA_REFERENCE_KERNEL_ANNOTATIONS_JSON);
  ASSERT_TRUE(in) << "reference missing: " << HTA_REFERENCE_KERNEL_ANNOTATIONS_JSON;
  const json reference = json::parse(in);
  const json& hta = reference.at("traces").at(GetParam());
  const CaptureData data =
      load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + GetParam());
  const KernelAnnotations result = gpu_kernels_with_user_annotations(data);
  EXPECT_EQ(result.rows, hta.at("rows").get<int64_t>());
  struct Got {
    int64_t rows = 0, duration_ns = 0, correlation_sum = 0;
  };
  std::map<std::string, Got> ours;
  const HtaStepFilter filter = HtaStepFilter::for_capture(data);
  const auto add = [&](int64_t annotation, int64_t duration, int64_t correlation) {
    Got& got =
        ours[annotation < 0 ? "-1" : data.name(data.gpu_annotations[size_t(annotation)].name_id)];
    ++got.rows, got.duration_ns += duration, got.correlation_sum += correlation;
  };
  for (size_t i = 0; i < data.gpu.size(); ++i)
    if (filter.keeps_gpu_event(data, i))
      add(result.of_gpu[i], data.gpu.duration(i), data.gpu.correlation[i]);
  for (size_t i = 0; i < data.gpu_syncs.size(); ++i)
    if (filter.keeps_gpu_sync(data, i))
      add(result.of_sync[i], data.gpu_syncs.end[i] - data.gpu_syncs.start[i],
          data.gpu_syncs.correlation[i]);
  EXPECT_EQ(ours.size(), hta.at("by_annotation").size());
  for (const auto& [name, row] : hta.at("by_annotation").items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(ours.count(name)) << "no row attributed to it";
    EXPECT_EQ(ours.at(name).rows, row.at("rows").get<int64_t>());
    EXPECT_EQ(ours.at(name).correlation_sum, row.at("correlation_sum").get<int64_t>());
    EXPECT_NEAR(double(ours.at(name).duration_ns) / 1e3, row.at("dur_us").get<double>(), 0.01);
  }
  EXPECT_GT(ours.size(), 1u) << "some row must carry an annotation";
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
