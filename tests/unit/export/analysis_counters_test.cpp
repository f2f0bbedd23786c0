// Golden test of the export's analysis counter tracks: on shared real traces, the "Queue Length"
// and "Memcpy BW" counter events are the ones Holistic Trace Analysis 0.5.0 writes with
// TraceAnalysis.generate_trace_with_counters() (pinned in
// tests/data/hta_reference/hta_reference_counters.json by compute_counters_reference.py there).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::exporter {
namespace {

using nlohmann::json;
using testing::ScratchDir;

// One counter track: (pid, "id" for the queue length or the copy kind's name for the bandwidth).
using TrackKey = std::pair<int64_t, std::string>;
struct Point {
  int64_t time_ns;
  double value;
};
using Tracks = std::map<TrackKey, std::vector<Point>>;

// The events of one counter (arg `counter`), grouped by track, in file order. `to_ns` turns an
// event's "ts" into absolute ns.
template <class ToNs>
Tracks tracks_of(const json& events, const std::string& counter, bool keyed_by_id, ToNs to_ns) {
  Tracks tracks;
  for (const json& e : events) {
    if (e.value("ph", "") != "C" || !e.contains("args") || !e.at("args").contains(counter))
      continue;
    const std::string key =
        keyed_by_id ? std::to_string(e.at("id").get<int64_t>()) : e.at("name").get<std::string>();
    tracks[{e.at("pid").get<int64_t>(), key}].push_back(
        {to_ns(e.at("ts")), e.at("args").at(counter).get<double>()});
  }
  return tracks;
}

// The step function a viewer draws: per distinct time, the value after the last event at it
// (HTA's unstable sort orders points of one time arbitrarily; the step function does not change).
std::map<int64_t, double> step_function(const std::vector<Point>& points) {
  std::map<int64_t, double> steps;
  for (const Point& p : points) steps[p.time_ns] = p.value;
  return steps;
}

void expect_same_tracks(const Tracks& ours, const Tracks& hta, const std::string& counter) {
  ASSERT_EQ(ours.size(), hta.size()) << counter << ": number of tracks";
  for (const auto& [key, hta_points] : hta) {
    SCOPED_TRACE(counter + " track pid " + std::to_string(key.first) + " " + key.second);
    ASSERT_TRUE(ours.count(key)) << "track missing from the export";
    const std::vector<Point>& points = ours.at(key);
    EXPECT_EQ(points.size(), hta_points.size()) << "one event per point, as HTA writes";
    const auto our_steps = step_function(points), hta_steps = step_function(hta_points);
    ASSERT_EQ(our_steps.size(), hta_steps.size());
    for (auto a = our_steps.begin(), b = hta_steps.begin(); a != our_steps.end(); ++a, ++b) {
      EXPECT_EQ(a->first, b->first) << "point time (ns)";
      EXPECT_NEAR(a->second, b->second, 1e-9 * std::max(1.0, std::abs(b->second)))
          << "value at " << b->first << " ns";
    }
  }
}

class AnalysisCounters : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalysisCounters, MatchHtaGenerateTraceWithCounters) {
  const json reference = json::parse(testing::read_text(HTA_REFERENCE_COUNTERS_JSON));
  ASSERT_TRUE(reference.at("traces").contains(GetParam()))
      << "no reference for " << GetParam() << " in " << HTA_REFERENCE_COUNTERS_JSON;
  const json& hta = reference.at("traces").at(GetParam());
  const std::string trace = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + GetParam();
  ASSERT_TRUE(std::filesystem::exists(trace)) << "reference trace missing: " << trace;

  ScratchDir dir;
  ASSERT_EQ(importers::import_files({trace}, dir.file("trace.db")).size(), 1u);
  store::Reader reader(dir.file("trace.db"));
  ChromeExportOptions options;
  options.analysis_counters = true;  // `fleetscope export --counters`
  const ChromeExportStats stats = export_chrome(reader, dir.file("exported.json"), options);
  const json exported = testing::read_json(dir.file("exported.json"));
  const int64_t base_ns = exported.at("baseTimeNanoseconds").get<int64_t>();

  // Ours: µs with three decimals from the base. HTA's: absolute whole µs (as floats).
  const auto ours_ns = [base_ns](const json& ts) {
    return base_ns + std::llround(ts.get<double>() * 1000.0);
  };
  const auto hta_ns = [](const json& ts) { return std::llround(ts.get<double>()) * 1000; };
  const Tracks our_queue = tracks_of(exported.at("traceEvents"), "Queue Length", true, ours_ns);
  const Tracks our_bandwidth = tracks_of(exported.at("traceEvents"), "Memcpy BW", false, ours_ns);
  const Tracks hta_queue = tracks_of(hta.at("queue_length"), "Queue Length", true, hta_ns);
  const Tracks hta_bandwidth = tracks_of(hta.at("memcpy_bandwidth"), "Memcpy BW", false, hta_ns);
  ASSERT_FALSE(hta_queue.empty()) << "the reference has queue-length points on this trace";
  ASSERT_FALSE(hta_bandwidth.empty()) << "the reference has copy-bandwidth points on this trace";

  expect_same_tracks(our_queue, hta_queue, "Queue Length");
  expect_same_tracks(our_bandwidth, hta_bandwidth, "Memcpy BW");
  EXPECT_EQ(stats.queue_length_points, static_cast<int64_t>(hta.at("queue_length").size()));
  EXPECT_EQ(stats.bandwidth_points, static_cast<int64_t>(hta.at("memcpy_bandwidth").size()));
}

INSTANTIATE_TEST_SUITE_P(
    SharedKinetoTraces, AnalysisCounters,
    ::testing::Values("hta-critical_path_alexnet_trace.json.gz",
                      "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = info.param.substr(4, info.param.find(".json") - 4);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// Without --counters (the default, ChromeExportOptions::analysis_counters = false) no such track
// is written and the rest of the file is.
TEST(AnalysisCountersOff, NoCounterTrackByDefault) {
  const std::string trace = std::string(FLEETSCOPE_SHARED_DATA) +
                            "/traces/kineto/hta-critical_path_alexnet_trace.json.gz";
  ScratchDir dir;
  ASSERT_EQ(importers::import_files({trace}, dir.file("trace.db")).size(), 1u);
  store::Reader reader(dir.file("trace.db"));
  const ChromeExportStats stats = export_chrome(reader, dir.file("exported.json"));
  EXPECT_EQ(stats.queue_length_points, 0);
  EXPECT_EQ(stats.bandwidth_points, 0);
  EXPECT_GT(stats.kernels, 0);
  const json exported = testing::read_json(dir.file("exported.json"));
  const auto counters = testing::events_where(exported, [](const json& e) {
    return e.value("ph", "") == "C" && e.contains("args") &&
           (e.at("args").contains("Queue Length") || e.at("args").contains("Memcpy BW"));
  });
  EXPECT_TRUE(counters.empty());
}

}  // namespace
}  // namespace fleetscope::exporter
