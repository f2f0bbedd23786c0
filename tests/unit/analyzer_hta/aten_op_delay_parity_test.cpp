// HTA get_aten_op_kernels_and_delay on shared real traces: the (ATen op, kernel sequence) pairs,
// their counts and mean delays are HTA 0.5.0's own (tests/data/hta_reference/
// hta_reference_aten_op.json, made by compute_aten_op_reference.py; ns_resolution analysed with
// HTA's ns rounding off on an exactly rebased copy, as the other parity references).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "fleetscope/analyzer/aten_op_delay.h"
#include "fleetscope/analyzer/capture_sink.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

std::string joined(const std::vector<std::string>& kernels) {
  std::string text;
  for (const std::string& k : kernels) text += (text.empty() ? "" : " -> ") + k;
  return text;
}

class AtenOpDelayParity : public ::testing::TestWithParam<std::string> {};

TEST_P(AtenOpDelayParity, SameSequencesCountsAndDelaysAsHta) {
  std::ifstream in(HTA_REFERENCE_ATEN_OP_JSON);
  ASSERT_TRUE(in) << "reference missing: " << HTA_REFERENCE_ATEN_OP_JSON;
  const json reference = json::parse(in);
  ASSERT_TRUE(reference.at("traces").contains(GetParam())) << GetParam();
  const json& hta = reference.at("traces").at(GetParam()).at("rows");
  ASSERT_FALSE(hta.empty());

  const CaptureData data =
      load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + GetParam());
  std::map<std::pair<std::string, std::string>, AtenOpKernels> ours;
  for (AtenOpKernels& row : aten_op_kernels_and_delay(data))
    ours.emplace(std::pair{row.op, joined(row.kernels)}, std::move(row));
  EXPECT_EQ(ours.size(), hta.size()) << "(op, kernel sequence) pairs";
  for (const json& row : hta) {
    const std::pair key{row.at("aten_op_name").get<std::string>(),
                        row.at("kernel_sequence").get<std::string>()};
    SCOPED_TRACE(key.first + " | " + key.second.substr(0, 120));
    ASSERT_TRUE(ours.count(key)) << "pair missing";
    const AtenOpKernels& mine = ours.at(key);
    EXPECT_EQ(mine.count, row.at("occurrence_count").get<int64_t>());
    // HTA rounds the means to 3 decimals of a µs.
    EXPECT_NEAR(mine.avg_aten_op_launch_delay_ns / 1000.0,
                row.at("avg_aten_op_launch_delay_us").get<double>(), 0.002);
    EXPECT_NEAR(mine.avg_runtime_delay_ns / 1000.0, row.at("avg_runtime_delay_us").get<double>(),
                0.002);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedKinetoTraces, AtenOpDelayParity,
    ::testing::Values("hta-critical_path_alexnet_trace.json.gz",
                      "hta-critical_path_simple_add_trace.json.gz",
                      "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
                      "hta-ns_resolution_trace_rank-0.json.gz"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = info.param.substr(4, info.param.find(".json") - 4);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace fleetscope::analyzer
