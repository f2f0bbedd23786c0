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
#include "fleetscope/analyzer/describe.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/kernel_stats.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/memory_bandwidth.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/queue_length.h"
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

// HTA's values for the trace, or nullptr with the reason to skip (HTA itself could not analyse
// it). A trace missing from the reference is a failure, not a skip: the reference data is
// missing.
const json* hta_values(const std::string& trace, std::string& skip_reason) {
  const json& traces = reference().at("traces");
  if (!traces.contains(trace)) {
    ADD_FAILURE() << trace << " is not in hta_reference.json (tests/data/hta_reference/README.md "
                  << "says how to compute it)";
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
  expect_within_relative(stats.launch_delay_mean_ns / kNsPerUs,
                         hta.at("launch_delay_us").at("mean").get<double>(),
                         "LaunchStatistics::launch_delay_mean_ns");
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

// HTA get_gpu_kernel_breakdown(include_memory_kernels=True): the time of each kernel-type state
// ("COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...) and the union per type, after
// HTA's last-step filter. Every shared trace is one device, so the device is the rank.
// HTA casts each piece of a state to int µs (truncation): the comparison emulates that on the
// analyzer's pieces, and checks the exact ns figure lies within [HTA, HTA + 1 µs per piece].
// Where HTA counted a host event with a `stream` arg as device work (the Triton trace's cpu_op,
// docs/metrics-hta.md §0.2) the store keeps it as host work, so the shares of the types are
// compared instead of µs.
TEST_P(HtaParity, KernelTypeBreakdown) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("kernel_type_breakdown");
  ASSERT_FALSE(hta.contains("error")) << hta.at("error");
  const auto rows = device_metrics(data);
  ASSERT_EQ(rows.size(), 1u) << "one device per shared trace";
  const DeviceMetrics& m = rows[0];
  std::map<std::string, double> truncated_us;
  std::map<std::string, int64_t> pieces;
  for (const auto& segment : kernel_type_segments(data, m.device)) {
    truncated_us[segment.state] += double(segment.span.length() / 1000);
    ++pieces[segment.state];
  }
  const json& categories =
      hta_->at("per_rank").at(rank_).at("gpu_events").at("gpu_event_categories");
  const bool host_events_as_gpu = categories.contains("cpu_op");
  const json& states = hta.at("states_us");
  double hta_total = 0, our_total = 0;
  for (const auto& [state, us] : states.items()) hta_total += us.get<double>();
  for (const auto& [state, us] : truncated_us) our_total += us;
  for (const auto& [state, us] : states.items()) {
    const double ours = truncated_us.count(state) ? truncated_us.at(state) : 0.0;
    if (host_events_as_gpu) {
      EXPECT_NEAR(100.0 * ours / our_total, 100.0 * us.get<double>() / hta_total,
                  kTolerancePercentagePoints)
          << "share of state " << state << " (HTA counts a cpu_op with a stream as GPU work)";
      continue;
    }
    expect_within_relative(ours, us.get<double>(), "state " + state + " us (µs-truncated pieces)");
    const double exact_us =
        double(m.kernel_type_states.count(state) ? m.kernel_type_states.at(state) : 0) / kNsPerUs;
    EXPECT_GE(exact_us + 1e-9, us.get<double>()) << state;
    EXPECT_LE(exact_us, us.get<double>() + double(pieces[state]) + 1e-9) << state;
  }
  for (const auto& [state, ns] : m.kernel_type_states)
    EXPECT_TRUE(states.contains(state) || truncated_us[state] == 0)
        << "state " << state << " (" << ns << " ns) not in HTA";
  if (host_events_as_gpu) return;
  // The union per type is the sum of the states that contain it (exact ns here, within HTA's
  // truncation bound).
  const json& by_type = hta.at("union_us");
  const KernelTimeByType& k = m.kernel_time_by_type;
  auto bound = [&](const std::string& type) {
    int64_t n = 0;
    for (const auto& [state, count] : pieces)
      if (state.find(type) != std::string::npos) n += count;
    return double(n);
  };
  for (const auto& [type, ns] :
       std::map<std::string, int64_t>{{"COMPUTATION", k.computation_ns},
                                      {"COMMUNICATION", k.communication_ns},
                                      {"MEMORY", k.memory_ns}}) {
    const double hta_us = by_type.at(type).get<double>();
    EXPECT_GE(double(ns) / kNsPerUs + 1e-9, hta_us) << "kernel_time_by_type " << type;
    EXPECT_LE(double(ns) / kNsPerUs, hta_us + bound(type) + 1e-9) << "kernel_time_by_type " << type;
    if (bound(type) == 0 || ns % 1000 == 0)
      expect_within_relative(double(ns) / kNsPerUs, hta_us, "kernel_time_by_type " + type);
  }
}

// HTA get_queue_length_summary / get_queue_length_time_series per stream: pandas describe() of
// the queue length at each change, and the series' point count, time-weighted mean and last
// value. At one timestamp HTA orders an enqueue and a dequeue as its (unstable) sort leaves them,
// which changes the value at those points (not the step function): the point statistics are
// compared within what the mixed-tie points can move, the time-weighted mean exactly.
TEST_P(HtaParity, QueueLength) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("per_rank").at(rank_).at("queue_length");
  ASSERT_FALSE(hta.contains("error")) << hta.at("error");
  const json& streams = hta.at("streams");
  std::map<std::string, QueueLengthSeries> ours;
  for (auto& series : queue_length_time_series(data)) {
    const std::string key = std::to_string(series.stream);
    ASSERT_FALSE(ours.count(key)) << "stream " << key << " on two devices";
    ours[key] = std::move(series);
  }
  EXPECT_EQ(ours.size(), streams.size()) << "streams with launches";
  for (const auto& [stream, entry] : streams.items()) {
    ASSERT_TRUE(ours.count(stream)) << "stream " << stream << " missing";
    const QueueLengthSeries& series = ours.at(stream);
    const QueueLengthSummary q = summarize(series);
    // Points in groups of one timestamp holding both an enqueue and a dequeue: each can differ
    // from HTA's by up to its group's size.
    double tie_slack = 0;
    const auto& p = series.points;
    for (size_t a = 0; a < p.size();) {
      size_t b = a;
      bool up = false, down = false;
      while (b < p.size() && p[b].time_ns == p[a].time_ns) {
        const int64_t before = b ? p[b - 1].queue_length : 0;
        (p[b].queue_length > before ? up : down) = true;
        ++b;
      }
      if (up && down) tie_slack += double(b - a) * double(b - a);
      a = b;
    }
    const json& d = entry.at("summary");
    const std::string where = "stream " + stream + ": ";
    EXPECT_EQ(q.count, d.at("count").get<int64_t>()) << where << "points";
    const double n = double(std::max<int64_t>(q.count, 1));
    EXPECT_NEAR(q.mean, d.at("mean").get<double>(),
                kRelativeTolerance * d.at("mean").get<double>() + tie_slack / n + 1e-9)
        << where << "mean (tie slack " << tie_slack << ")";
    const double value_slack = tie_slack > 0 ? std::sqrt(tie_slack) : 0.0;
    EXPECT_NEAR(q.min, d.at("min").get<double>(), value_slack + 1e-9) << where << "min";
    EXPECT_NEAR(q.max, d.at("max").get<double>(), value_slack + 1e-9) << where << "max";
    EXPECT_NEAR(q.p50, d.at("50%").get<double>(), value_slack + 1e-9) << where << "median";
    if (tie_slack == 0) {
      expect_within_relative(q.std, as_double(d.at("std")), where + "std");
      expect_within_relative(q.p25, d.at("25%").get<double>(), where + "p25");
      expect_within_relative(q.p75, d.at("75%").get<double>(), where + "p75");
    }
    const json& ts = entry.at("time_series");
    EXPECT_EQ(q.count, ts.at("points").get<int64_t>()) << where << "series points";
    EXPECT_EQ(p.empty() ? 0 : p.back().queue_length, ts.at("last_queue_length").get<int64_t>())
        << where << "last value";
    if (!ts.at("time_weighted_mean").is_null()) {
      ASSERT_TRUE(q.time_weighted_mean.has_value()) << where;
      expect_within_relative(*q.time_weighted_mean, ts.at("time_weighted_mean").get<double>(),
                             where + "time-weighted mean");
    }
  }
}

// Compares a describe() row of HTA (µs, or GB/s when `scale` is 1) with one of ours (ns):
// count exactly, the statistics within 0.5 % (plus HTA's rounding to 2 decimals where it rounds).
void expect_describe(const Describe& ours, const json& hta, double scale, double rounding,
                     const std::string& where) {
  EXPECT_EQ(ours.count, hta.at("count").get<int64_t>()) << where << ": count";
  if (ours.count == 0) return;
  const std::pair<const char*, double> stats[] = {{"mean", ours.mean}, {"min", ours.min},
                                                  {"25%", ours.p25},   {"50%", ours.p50},
                                                  {"75%", ours.p75},   {"max", ours.max}};
  for (const auto& [name, value] : stats) {
    const double expected = as_double(hta.at(name));
    EXPECT_NEAR(value / scale, expected, kRelativeTolerance * std::abs(expected) + rounding + 1e-9)
        << where << ": " << name;
  }
  if (ours.count > 1) {
    const double expected = as_double(hta.at("std"));
    EXPECT_NEAR(ours.std / scale, expected, kRelativeTolerance * expected + rounding + 1e-9)
        << where << ": std";
  }
}

// HTA get_idle_time_breakdown(show_idle_interval_stats=True): describe() of the idle intervals per
// stream and category, µs rounded to 2 decimals by HTA.
TEST_P(HtaParity, IdleIntervalStats) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("per_rank").at(rank_).at("idle_interval_stats");
  ASSERT_FALSE(hta.contains("error")) << hta.at("error");
  IdleTimeOptions options;
  options.keep_intervals = true;
  std::map<std::string, IdleTimeBreakdown> ours;
  for (auto& row : idle_time_breakdown(data, options)) ours[std::to_string(row.stream)] = row;
  int compared = 0;
  for (const auto& [stream, categories] : hta.at("streams").items()) {
    ASSERT_TRUE(ours.count(stream)) << "stream " << stream;
    const IdleTimeBreakdown& row = ours.at(stream);
    const std::map<std::string, const std::vector<int64_t>*> by_category = {
        {"host_wait", &row.host_wait_intervals_ns},
        {"kernel_wait", &row.kernel_wait_intervals_ns},
        {"other", &row.other_intervals_ns}};
    for (const auto& [category, stats] : categories.items()) {
      ASSERT_TRUE(by_category.count(category)) << category;
      const auto& intervals = *by_category.at(category);
      expect_describe(describe(std::vector<double>(intervals.begin(), intervals.end())), stats,
                      kNsPerUs, 0.01, "stream " + stream + " " + category);
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "HTA reports idle intervals on every shared trace with GPU work";
}

// HTA get_memory_bw_summary: describe() of the bandwidth time series per copy kind (GB/s) over
// its points > 0. HTA takes each copy's bandwidth from Kineto's "memory bandwidth (GB/s)" arg,
// which Kineto computes from the exact ns duration; the store keeps bytes and times, so
// fleetscope computes bytes / duration from the trace's own times. On traces with whole-µs
// timestamps those differ (a 1.136 µs memset written as 1 µs), so the reference is HTA's code on
// a copy whose args are recomputed the same way (`memory_bw_from_trace_durations`,
// compute_reference.py); on ns-resolution traces both references agree within 0.5 %, and the
// test checks fleetscope against HTA's arg-based summary there too.
TEST_P(HtaParity, MemoryBandwidthSummary) {
  const CaptureData& data = loaded(GetParam());
  const json& by_rank = hta_->at("memory_bw_from_trace_durations");
  ASSERT_FALSE(by_rank.contains("error")) << by_rank.at("error");
  const json& hta = by_rank.at(rank_);
  std::map<std::string, MemoryBandwidthSummary> ours;
  for (auto& s : memory_bandwidth_summary(data)) ours[s.copy_kind] = s;
  for (const auto& [kind, entry] : hta.at("kinds").items()) {
    ASSERT_TRUE(ours.count(kind)) << "copy kind " << kind;
    expect_describe(ours.at(kind).gbps, entry.at("gbps"), 1.0, 0.0, kind);
  }
  for (const auto& [kind, s] : ours)
    EXPECT_TRUE(hta.at("kinds").contains(kind) || s.gbps.count == 0) << "HTA lacks " << kind;
  // Whole-µs trace: Kineto's args come from finer times than the trace keeps.
  bool sub_us = false;
  for (size_t i = 0; i < data.gpu.size() && !sub_us; ++i)
    sub_us = data.gpu.start[i] % 1000 != 0 || data.gpu.end[i] % 1000 != 0;
  if (!sub_us) return;
  const json& args_based = hta_->at("per_rank").at(rank_).at("memory_bw_summary");
  for (const auto& [kind, entry] : args_based.at("kinds").items())
    expect_describe(ours.at(kind).gbps, entry.at("gbps"), 1.0, 0.0, kind + " (Kineto's args)");
}

// HTA get_time_spent_blocked_on_full_queue (max queue length 1024): no shared trace reaches a full
// queue (the longest is 1022 on ns_resolution), so HTA and the analyzer both report none.
TEST_P(HtaParity, BlockedOnFullQueue) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("per_rank").at(rank_).at("blocked_on_full_queue");
  ASSERT_FALSE(hta.contains("error")) << hta.at("error");
  const auto ours = time_blocked_on_full_queue(queue_length_time_series(data),
                                               hta.at("max_queue_length").get<int64_t>());
  ASSERT_EQ(ours.size(), hta.at("rows").size());
  for (size_t k = 0; k < ours.size(); ++k)
    expect_within_relative(double(ours[k].blocked_ns) / kNsPerUs,
                           hta.at("rows")[k].at("duration_at_max_queue_length_us").get<double>(),
                           "blocked time");
}

// HTA get_gpu_kernel_breakdown's kernel table (10 names per type, 0.8 duration ratio): the names
// HTA keeps and their total time, and the total folded into "others".
TEST_P(HtaParity, KernelTable) {
  const CaptureData& data = loaded(GetParam());
  const json& hta = hta_->at("kernel_table");
  ASSERT_FALSE(hta.contains("error")) << hta.at("error");
  const json& categories =
      hta_->at("per_rank").at(rank_).at("gpu_events").at("gpu_event_categories");
  if (categories.contains("cpu_op"))
    GTEST_SKIP() << "HTA counts a host event with a stream as a kernel (docs/metrics-hta.md §0.2)";
  KernelStatsOptions options;
  options.top = hta.at("num_kernels").get<size_t>();
  options.duration_ratio = hta.at("duration_ratio").get<double>();
  std::map<std::string, KernelTypeStats> ours;
  for (auto& t : kernel_stats(data, options)) ours[t.kernel_type] = t;
  for (const auto& [type, ranks] : hta.at("sum_us").items()) {
    const json& names = ranks.at(rank_);
    ASSERT_TRUE(ours.count(type)) << type;
    const KernelTypeStats& t = ours.at(type);
    std::map<std::string, double> our_us;
    for (const auto& k : t.top) our_us[k.name] = double(k.sum_ns) / kNsPerUs;
    if (t.others_kernels) our_us["others"] = double(t.others_sum_ns) / kNsPerUs;
    EXPECT_EQ(our_us.size(), names.size()) << type << ": rows";
    for (const auto& [name, us] : names.items()) {
      ASSERT_TRUE(our_us.count(name)) << type << ": HTA keeps '" << name << "'";
      expect_within_relative(our_us.at(name), us.get<double>(), type + " " + name + " sum us");
    }
  }
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
