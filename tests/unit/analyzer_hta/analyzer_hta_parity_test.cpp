// Parity of the analyzer with Holistic Trace Analysis (HTA) on the shared Kineto traces.
//
// Each trace is imported with the Kineto importer into a temporary database, loaded with the
// analyzer, and its temporal breakdown, idle-time breakdown and launch statistics are compared
// with the numbers HTA computed on the same file (tests/data/hta_reference/hta_reference.json,
// made by compute_reference.py; definitions in docs/metrics-hta.md). The tolerance is the one the
// issue states: 0.5 percentage points on shares; aggregates in µs agree within 0.5 %. The
// communication-computation overlap is compared the same way.
//
// On traces with float (ns-resolution) timestamps HTA first rounds every event inward to whole µs,
// after parsing the µs-since-epoch values into float64 (0.25 µs resolution at that magnitude).
// The analyzer keeps integer nanoseconds, so for those traces the reference is HTA's run with the
// rounding switched off on an exactly rebased copy of the trace (`ns_exact` in the JSON).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kTolerancePercentagePoints = 0.5;
constexpr double kRelativeTolerance = 0.005;  // 0.5 % of the HTA value
constexpr double kNsPerUs = 1000.0;

// The traces HTA was run on (compute_reference.py DEFAULT_TRACES). A trace HTA could not load is
// recorded in the JSON with an "error" and skipped here with that reason.
const std::vector<std::string> kTraces = {
    "hta-ns_resolution_trace_rank-0.json.gz",
    "hta-critical_path_alexnet_trace.json.gz",
    "hta-critical_path_simple_add_trace.json.gz",
    "hta-nccl_parser_config_nccl_data.json.gz",
    "hta-timeline_analysis_sampled_rank-0.json.gz",
    "hta-trace_filter_sampled_rank-1.json.gz",
    "hta-cupti_profiler_trace.json.gz",
    "hta-triton_example_triton_example.json.gz",
    "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
};

const json& reference() {
  static const json document = [] {
    std::ifstream in(HTA_REFERENCE_JSON);
    if (!in) throw std::runtime_error("cannot read " + std::string(HTA_REFERENCE_JSON));
    return json::parse(in);
  }();
  return document;
}

// Directory for the imported databases; removed when the test program ends.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    path = fs::temp_directory_path() /
           ("fleetscope-hta-parity-" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Imports and loads each trace once; the three metric tests of a trace share it.
const CaptureData& loaded(const std::string& trace) {
  static ScratchDir scratch;
  static std::map<std::string, std::unique_ptr<CaptureData>> cache;
  auto& slot = cache[trace];
  if (!slot) {
    const std::string input = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace;
    const std::string db = (scratch.path / (trace + ".db")).string();
    importers::import_files({input}, db);
    store::Reader reader(db);
    slot = std::make_unique<CaptureData>(
        load_capture(reader, resolve_capture_id(reader, std::nullopt)));
  }
  return *slot;
}

// HTA's values for the trace, or nullptr with the reason to skip.
const json* hta_values(const std::string& trace, std::string& skip_reason) {
  const json& traces = reference().at("traces");
  if (!traces.contains(trace)) {
    skip_reason = "not in hta_reference.json";
    return nullptr;
  }
  const json& entry = traces.at(trace);
  if (entry.contains("error")) {
    skip_reason = "HTA " + reference().at("hta_version").get<std::string>() +
                  " cannot analyse this trace: " + entry.at("error").get<std::string>();
    return nullptr;
  }
  return entry.contains("ns_exact") ? &entry.at("ns_exact") : &entry;
}

std::string only_rank(const std::string& trace) {
  const json& ranks = reference().at("traces").at(trace).at("ranks");
  EXPECT_EQ(ranks.size(), 1u) << "every shared trace is one rank";
  return std::to_string(ranks.at(0).get<int>());
}

double as_double(const json& value) {
  return value.is_null() ? 0.0 : value.get<double>();
}

// Median as pandas computes it (mean of the two middle values for an even count).
double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

void expect_within_relative(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, kRelativeTolerance * std::abs(expected) + 1e-3)
      << what << " (HTA " << expected << ", analyzer " << actual << ")";
}

class HtaParity : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string reason;
    hta_ = hta_values(GetParam(), reason);
    if (!hta_) GTEST_SKIP() << reason;
    rank_ = only_rank(GetParam());
  }
  const json* hta_ = nullptr;
  std::string rank_;
};

TEST(HtaReference, RecordsVersionCommandAndEveryTrace) {
  const json& ref = reference();
  EXPECT_FALSE(ref.at("hta_version").get<std::string>().empty());
  EXPECT_NE(ref.at("command").get<std::string>().find("compute_reference.py"), std::string::npos);
  EXPECT_EQ(ref.at("time_unit"), "us");
  int analysed = 0;
  for (const auto& trace : kTraces) {
    ASSERT_TRUE(ref.at("traces").contains(trace)) << trace;
    if (!ref.at("traces").at(trace).contains("error")) ++analysed;
  }
  EXPECT_GE(analysed, 9) << "HTA failed on more traces than when the reference was made";
}

// HTA get_temporal_breakdown: idle / compute / non-compute as shares of the first-to-last
// GPU-event span of the rank.
TEST_P(HtaParity, TemporalBreakdown) {
  const CaptureData& data = loaded(GetParam());
  const auto rows = temporal_breakdown(data);
  ASSERT_EQ(rows.size(), 1u) << "HTA reports one breakdown per rank; the trace has one device";
  const auto& row = rows.front();

  const json& tb = hta_->at("temporal_breakdown").at(rank_);
  const json& events = hta_->at("per_rank").at(rank_).at("gpu_events");
  const double span_us = tb.at("kernel_time_us").get<double>();
  ASSERT_GT(span_us, 0);
  const std::string context =
      " [HTA span " + events.at("span_begin_us").dump() + ".." + events.at("span_end_us").dump() +
      " us over " + events.at("gpu_event_categories").dump() + "; analyzer span " +
      std::to_string(row.span.begin / 1000) + ".." + std::to_string(row.span.end / 1000) + " us]";

  EXPECT_NEAR(100.0 * row.idle_fraction(), 100.0 * as_double(tb.at("idle_time_us")) / span_us,
              kTolerancePercentagePoints)
      << "idle %" << context;
  EXPECT_NEAR(100.0 * row.compute_fraction(), 100.0 * as_double(tb.at("compute_time_us")) / span_us,
              kTolerancePercentagePoints)
      << "compute %" << context;
  EXPECT_NEAR(100.0 * row.non_compute_fraction(),
              100.0 * as_double(tb.at("non_compute_time_us")) / span_us, kTolerancePercentagePoints)
      << "non-compute %" << context;
}

// HTA get_idle_time_breakdown: per stream, the shares of host wait, kernel wait and other in the
// stream's idle time (kernel-wait threshold 30 µs).
TEST_P(HtaParity, IdleTimeBreakdownPerStream) {
  const CaptureData& data = loaded(GetParam());
  const json& breakdown = hta_->at("per_rank").at(rank_).at("idle_time_breakdown");
  IdleTimeOptions options;
  options.consecutive_kernel_delay_ns =
      static_cast<int64_t>(breakdown.at("kernel_wait_threshold_us").get<double>() * kNsPerUs);
  const auto rows = idle_time_breakdown(data, options);

  std::set<int32_t> hta_streams, analyzer_streams;
  for (const auto& row : rows) analyzer_streams.insert(row.stream);
  for (const auto& [stream_text, categories] : breakdown.at("streams").items()) {
    const int32_t stream = std::stoi(stream_text);
    hta_streams.insert(stream);
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.stream == stream; });
    ASSERT_NE(it, rows.end()) << "HTA has stream " << stream << ", the analyzer does not";

    auto hta_us = [&](const char* category) {
      return categories.contains(category) ? as_double(categories.at(category).at("idle_time_us"))
                                           : 0.0;
    };
    const double host = hta_us("host_wait"), kernel = hta_us("kernel_wait"),
                 other = hta_us("other");
    const double total = host + kernel + other;
    if (total == 0) {
      EXPECT_EQ(it->total_ns(), 0) << "stream " << stream << ": HTA sees no idle time";
      continue;
    }
    const std::string where =
        "stream " + std::to_string(stream) + " (HTA idle us: host " + std::to_string(host) +
        ", kernel " + std::to_string(kernel) + ", other " + std::to_string(other) +
        "; analyzer ns: host " + std::to_string(it->host_wait_ns) + ", kernel " +
        std::to_string(it->kernel_wait_ns) + ", other " + std::to_string(it->other_ns) + ")";
    EXPECT_NEAR(100.0 * it->ratio(it->host_wait_ns), 100.0 * host / total,
                kTolerancePercentagePoints)
        << "host-wait share, " << where;
    EXPECT_NEAR(100.0 * it->ratio(it->kernel_wait_ns), 100.0 * kernel / total,
                kTolerancePercentagePoints)
        << "kernel-wait share, " << where;
    EXPECT_NEAR(100.0 * it->ratio(it->other_ns), 100.0 * other / total, kTolerancePercentagePoints)
        << "other share, " << where;
    expect_within_relative(static_cast<double>(it->total_ns()) / kNsPerUs, total,
                           "total idle us, " + where);
  }
  EXPECT_EQ(analyzer_streams, hta_streams) << "streams with GPU work";
}

// HTA get_cuda_kernel_launch_stats: one row per (launch call, GPU event) pair joined on the
// correlation id; launch delay = max(0, GPU start − end of the call).
TEST_P(HtaParity, LaunchStatistics) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("per_rank").at(rank_).at("launch_stats");
  LaunchStatisticsOptions options;
  options.runtime_cutoff_ns =
      static_cast<int64_t>(hta.at("runtime_cutoff_us").get<double>() * kNsPerUs);
  options.launch_delay_cutoff_ns =
      static_cast<int64_t>(hta.at("launch_delay_cutoff_us").get<double>() * kNsPerUs);
  options.include_memory_events = hta.at("include_memory_events").get<bool>();
  const LaunchStatistics stats = launch_statistics(data, options);

  const auto hta_count = hta.at("count").get<int64_t>();
  const auto count = static_cast<int64_t>(stats.launches.size());
  EXPECT_NEAR(static_cast<double>(count), static_cast<double>(hta_count),
              kRelativeTolerance * static_cast<double>(hta_count))
      << "launches joined to GPU events";
  if (hta_count == 0 || count == 0) return;

  std::vector<double> delay_us, cpu_us, gpu_us;
  for (const auto& launch : stats.launches) {
    delay_us.push_back(static_cast<double>(std::max<int64_t>(0, launch.launch_delay_ns())) /
                       kNsPerUs);
    cpu_us.push_back(static_cast<double>(launch.cpu_duration_ns) / kNsPerUs);
    gpu_us.push_back(static_cast<double>(launch.gpu_duration_ns) / kNsPerUs);
  }
  expect_within_relative(mean(delay_us), hta.at("launch_delay_us").at("mean").get<double>(),
                         "mean launch delay us");
  expect_within_relative(median(delay_us), hta.at("launch_delay_us").at("median").get<double>(),
                         "median launch delay us");
  expect_within_relative(*std::max_element(delay_us.begin(), delay_us.end()),
                         hta.at("launch_delay_us").at("max").get<double>(), "max launch delay us");
  expect_within_relative(mean(cpu_us), hta.at("cpu_duration_us").at("mean").get<double>(),
                         "mean launch-call duration us");
  expect_within_relative(mean(gpu_us), hta.at("gpu_duration_us").at("mean").get<double>(),
                         "mean GPU duration us");

  auto share = [](int64_t part, int64_t whole) {
    return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  };
  EXPECT_NEAR(share(stats.short_kernels, count),
              share(hta.at("short_kernel_count").get<int64_t>(), hta_count),
              kTolerancePercentagePoints)
      << "short kernels (" << stats.short_kernels << " vs HTA " << hta.at("short_kernel_count")
      << ")";
  EXPECT_NEAR(share(stats.runtime_outliers, count),
              share(hta.at("runtime_outlier_count").get<int64_t>(), hta_count),
              kTolerancePercentagePoints)
      << "launch calls > runtime cutoff (" << stats.runtime_outliers << " vs HTA "
      << hta.at("runtime_outlier_count") << ")";
  EXPECT_NEAR(share(stats.launch_delay_outliers, count),
              share(hta.at("launch_delay_outlier_count").get<int64_t>(), hta_count),
              kTolerancePercentagePoints)
      << "launch-delay outliers (" << stats.launch_delay_outliers << " vs HTA "
      << hta.at("launch_delay_outlier_count") << ")";
}

// HTA get_comm_comp_overlap: the share of communication-kernel time that computation kernels
// overlap (HTA merges each class per rank; every shared trace is one device). HTA returns the
// percentage rounded to 2 decimals, so the tolerance is the 0.5 percentage points; a rank
// without communication kernels has no ratio in HTA (0/0) or in the analyzer.
TEST_P(HtaParity, CommCompOverlap) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("comm_comp_overlap").at(rank_).at("pctg");
  std::optional<double> analyzer;
  for (const auto& row : comm_comp_overlap(data))
    if (row.ratio()) {
      ASSERT_FALSE(analyzer.has_value()) << "communication on two devices of one rank";
      analyzer = 100.0 * *row.ratio();
    }
  if (hta.is_null()) {
    EXPECT_FALSE(analyzer.has_value())
        << "HTA finds no communication kernels; analyzer " << analyzer.value_or(0) << " %";
    return;
  }
  ASSERT_TRUE(analyzer.has_value()) << "HTA overlap " << hta << " %, analyzer has no ratio";
  EXPECT_NEAR(*analyzer, hta.get<double>(), kTolerancePercentagePoints) << "overlap %";
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.find(".json"));
  if (name.rfind("hta-", 0) == 0) name = name.substr(4);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, HtaParity, ::testing::ValuesIn(kTraces), test_name);

}  // namespace
}  // namespace fleetscope::analyzer
