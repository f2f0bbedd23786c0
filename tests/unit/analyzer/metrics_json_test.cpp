// The JSON view of every metric: names, values from the hand-computed cases, and the rule that a
// null metric always carries a "<name>_needs" sibling.
#include "fleetscope/analyzer/metrics_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
using testing::us;

// Every null value in an object has a non-empty string sibling "<key>_needs".
void expect_needs_for_every_null(const json& node, const std::string& path) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it.value().is_null()) {
        const std::string needs = it.key() + "_needs";
        ASSERT_TRUE(node.contains(needs)) << path << "." << it.key() << " is null without _needs";
        EXPECT_TRUE(node[needs].is_string() && !node[needs].get<std::string>().empty()) << path;
      }
      expect_needs_for_every_null(it.value(), path + "." + it.key());
    }
  } else if (node.is_array()) {
    for (size_t k = 0; k < node.size(); ++k)
      expect_needs_for_every_null(node[k], path + "[" + std::to_string(k) + "]");
  }
}

TEST(MetricsJson, SharedCaseValuesAndNames) {
  const json j = metrics_json(testing::shared_case());
  for (const char* section : {"capture", "devices", "streams", "iterations", "launches", "memory"})
    EXPECT_TRUE(j.contains(section)) << section;
  const json& d = j["devices"]["0"];
  EXPECT_EQ(d["span_ns"], us(500));
  EXPECT_EQ(d["gpu_busy_kernels_ns"], us(360));
  EXPECT_EQ(d["gpu_busy_all_ns"], us(380));
  EXPECT_EQ(d["gpu_idle_ns"], us(120));
  EXPECT_EQ(d["temporal_span_ns"], us(500));
  EXPECT_EQ(d["temporal_compute_ns"], us(260));
  EXPECT_EQ(d["temporal_non_compute_ns"], us(120));
  EXPECT_EQ(d["temporal_idle_ns"], us(120));
  EXPECT_DOUBLE_EQ(d["temporal_compute_fraction"].get<double>(), 0.52);
  EXPECT_DOUBLE_EQ(d["temporal_idle_fraction"].get<double>(), 0.24);
  EXPECT_EQ(d["kernel_time_by_type_ns"]["compute"], us(260));
  EXPECT_EQ(d["kernel_time_by_type_ns"]["communication"], us(100));
  EXPECT_EQ(d["kernel_time_by_type_ns"]["memory"], us(30));
  EXPECT_DOUBLE_EQ(d["comm_comp_overlap"].get<double>(), 0.0);
  EXPECT_EQ(d["comm_ns"], us(100));
  EXPECT_DOUBLE_EQ(d["gpu_utilization"].get<double>(), 380.0 / 500.0);
  // No steps and no CPU ops; no GPU facts; no occupancy.
  EXPECT_TRUE(d["kernel_utilization_steps"].is_null());
  EXPECT_NE(d["kernel_utilization_steps_needs"].get<std::string>().find("ProfilerStep"),
            std::string::npos);
  EXPECT_TRUE(d["est_sm_efficiency"].is_null());
  EXPECT_TRUE(d["est_achieved_occupancy"].is_null());

  ASSERT_EQ(j["streams"].size(), 3u);
  EXPECT_EQ(j["streams"][0]["stream"], 7);
  EXPECT_EQ(j["streams"][0]["idle_host_wait_ns"], us(190));
  EXPECT_EQ(j["streams"][0]["idle_other_ns"], us(80));
  EXPECT_EQ(j["streams"][1]["idle_kernel_wait_ns"], us(10));
  EXPECT_EQ(j["streams"][0]["consecutive_kernel_delay_ns"], 30'000);

  const json& l = j["launches"];
  EXPECT_EQ(l["launches"], 5);
  EXPECT_EQ(l["short_kernels"], 1);
  EXPECT_EQ(l["launch_delay_outliers"], 1);
  EXPECT_EQ(l["launch_delay_p50_ns"], us(5));
  EXPECT_EQ(l["launch_delay_p95_ns"], us(145));
  EXPECT_EQ(l["launch_delay_max_ns"], us(145));

  EXPECT_TRUE(j["iterations"].empty());
  EXPECT_TRUE(j["capture"]["steps_source"].is_null());
  EXPECT_TRUE(j["memory"]["0"]["peak_bytes"].is_null());
  EXPECT_NE(j["memory"]["0"]["peak_bytes_needs"].get<std::string>().find("memory events"),
            std::string::npos);
  expect_needs_for_every_null(j, "$");
}

TEST(MetricsJson, PluginCaseIterationBreakdownAndUtilization) {
  testing::CaptureBuilder b;
  for (auto [s, e] : std::vector<std::pair<int64_t, int64_t>>{
           {130, 140}, {135, 150}, {150, 150}, {145, 170}, {200, 220}})
    b.kernel(us(s), us(e));
  b.step(1, us(100), us(220));
  const json j = metrics_json(b.build());
  EXPECT_DOUBLE_EQ(j["devices"]["0"]["kernel_utilization_steps"].get<double>(), 0.5);
  EXPECT_EQ(j["capture"]["steps_source"], "iterations");
  EXPECT_EQ(j["capture"]["steps_span_ns"], json::array({us(100), us(220)}));
  ASSERT_EQ(j["iterations"].size(), 1u);
  const json& it = j["iterations"][0];
  EXPECT_EQ(it["step"], 1);
  EXPECT_EQ(it["step_time_ns"], us(120));
  EXPECT_EQ(it["kernel_ns"], us(60));
  EXPECT_EQ(it["other_ns"], us(60));
  EXPECT_EQ(it["memcpy_ns"], 0);
  EXPECT_TRUE(it["in_overview"].get<bool>());
  EXPECT_TRUE(it["memory"]["0"]["peak_bytes"].is_null());
  // No launch calls: the delay quantiles are undefined, the counts are zero.
  EXPECT_EQ(j["launches"]["launches"], 0);
  EXPECT_TRUE(j["launches"]["launch_delay_p50_ns"].is_null());
  expect_needs_for_every_null(j, "$");
}

TEST(MetricsJson, MemorySectionAndPerIterationMemory) {
  testing::CaptureBuilder b;
  b.kernel(0, 10).step(1, 0, 100).step(2, 100, 200);
  auto add = [&](int64_t ts, int64_t bytes, int64_t total) {
    store::MemoryEvent e;
    e.ts = ts, e.deviceId = 0, e.bytes = bytes, e.total_allocated = total;
    b.raw().memory.push_back(e);
  };
  // total_allocated is reported: it wins over the running sum (starts at 1000 − 100 = 900).
  add(10, 100, 1000), add(50, -100, 900), add(120, 300, 1200), add(150, -300, 900);
  const json j = metrics_json(b.build());
  const json& m = j["memory"]["0"];
  EXPECT_EQ(m["memory_events"], 4);
  EXPECT_EQ(m["peak_bytes"], 1200);
  EXPECT_EQ(m["baseline_bytes"], 900);
  EXPECT_EQ(m["persistent_bytes"], 900);
  EXPECT_EQ(m["ephemeral_peak_bytes"], 300);
  EXPECT_DOUBLE_EQ(m["ephemeral_peak_stddev_bytes"].get<double>(), 100.0);
  ASSERT_EQ(j["iterations"].size(), 2u);
  EXPECT_EQ(j["iterations"][0]["memory"]["0"]["peak_bytes"], 1000);
  EXPECT_EQ(j["iterations"][0]["memory"]["0"]["ephemeral_peak_bytes"], 100);
  EXPECT_EQ(j["iterations"][1]["memory"]["0"]["baseline_bytes"], 900);
  EXPECT_EQ(j["iterations"][1]["memory"]["0"]["peak_bytes"], 1200);
  expect_needs_for_every_null(j, "$");
}

}  // namespace
}  // namespace fleetscope::analyzer
