// The critical path (analyzer/critical_path.h) against HTA 0.5.0's CriticalPathAnalysis on the
// shared Kineto traces, with the annotations and instances HTA's own tests use. HTA's numbers are
// pinned in tests/data/hta_reference/hta_reference_critical_path.json (made by
// compute_critical_path_reference.py there; HTA is not needed to run this test).
//
// HTA works in whole µs and fleetscope in ns, so lengths agree to 1 % and the bound_by shares to
// 1 percentage point. The graph's sync_dependency edges (Stream Sync, Context Sync and the waits on
// recorded CUDA events: Event Sync and Stream Wait Event, through Kineto's
// wait_on_cuda_event_record_corr_id and wait_on_stream) must be exactly HTA's, named by the
// correlation ids of the events they join.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/critical_path.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

const json& reference() {
  static const json ref = [] {
    std::ifstream in(HTA_REFERENCE_CRITICAL_PATH_JSON);
    if (!in)
      throw std::runtime_error("cannot read " + std::string(HTA_REFERENCE_CRITICAL_PATH_JSON));
    return json::parse(in).at("traces");
  }();
  return ref;
}

CriticalPath ours(const std::string& trace) {
  const json& hta = reference().at(trace);
  const CaptureData data =
      load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + trace);
  CriticalPathOptions options;
  const std::string annotation = hta.at("annotation").get<std::string>();
  if (!annotation.empty()) {
    options.annotation = annotation;
    options.instance = hta.at("instance").get<int64_t>();
  } else {
    options.whole_capture = true;
  }
  return critical_path(data, options);
}

class CriticalPathParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CriticalPathParity, LengthAndBoundByMatchHta) {
  const json& hta = reference().at(GetParam());
  ASSERT_TRUE(hta.at("success").get<bool>());
  const CriticalPath cp = ours(GetParam());
  ASSERT_TRUE(cp.computed) << cp.not_computed_reason;
  const double hta_us = hta.at("path_length_us").get<double>();
  const double ours_us = static_cast<double>(cp.length_ns) / 1000.0;
  // The figures docs/analyzer.md quotes.
  std::cout << GetParam() << ": fleetscope " << cp.length_ns << " ns, HTA " << hta_us << " us, "
            << cp.event_sync_edges << " CUDA-event sync edges\n";
  EXPECT_NEAR(ours_us, hta_us, 0.01 * hta_us);
  for (const auto& [bound, us] : hta.at("by_bound_us").items()) {
    const auto it = cp.by_bound.find(bound);
    const double share = it == cp.by_bound.end() ? 0.0 : static_cast<double>(it->second) / 1000.0;
    EXPECT_NEAR(100.0 * share / ours_us, 100.0 * us.get<double>() / hta_us, 1.0) << bound;
  }
  for (const auto& [bound, ns] : cp.by_bound)
    EXPECT_TRUE(hta.at("by_bound_us").contains(bound) || ns < cp.length_ns / 100)
        << bound << " is " << ns << " ns on fleetscope's path and absent from HTA's";
}

INSTANTIATE_TEST_SUITE_P(
    SharedTraces, CriticalPathParity,
    ::testing::Values("hta-critical_path_simple_add_trace.json.gz",
                      "hta-critical_path_alexnet_trace.json.gz",
                      "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz",
                      "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
                      "hta-ns_resolution_trace_rank-0.json.gz"),
    [](const auto& info) {
      std::string name = info.param.substr(4, info.param.find('.') - 4);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// One sync edge as the reference names it: "<from correlation>:<end|start> -> <to
// correlation>:<..>".
std::string edge_key(int64_t from, bool from_start, int64_t to, bool to_start) {
  return std::to_string(from) + (from_start ? ":start" : ":end") + " -> " + std::to_string(to) +
         (to_start ? ":start" : ":end");
}

int64_t correlation_of(const CaptureData& data, CriticalEventKind kind, int64_t index) {
  const auto i = static_cast<size_t>(index);
  if (kind == CriticalEventKind::gpu) return data.gpu.correlation[i];
  if (kind == CriticalEventKind::runtime) return data.runtime.correlation[i];
  return -1;  // CPU operators are never joined by a sync edge
}

TEST_P(CriticalPathParity, SyncEdgesAreHtas) {
  const json& hta = reference().at(GetParam());
  const CaptureData data =
      load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + GetParam());
  const CriticalPath cp = ours(GetParam());
  ASSERT_TRUE(cp.computed) << cp.not_computed_reason;
  std::multiset<std::string> expected, actual;
  for (const json& e : hta.at("sync_edges"))
    expected.insert(
        edge_key(e.at("from").at("correlation").get<int64_t>(), e.at("from").at("at") == "start",
                 e.at("to").at("correlation").get<int64_t>(), e.at("to").at("at") == "start"));
  for (const CriticalSyncEdge& e : cp.sync_edges)
    actual.insert(edge_key(correlation_of(data, e.from_kind, e.from_index), e.from_start,
                           correlation_of(data, e.to_kind, e.to_index), e.to_start));
  EXPECT_EQ(actual, expected);
}

// The traces whose waits on CUDA events HTA turns into edges: every one is followed.
TEST(CriticalPathEventWaits, EveryRecordedWaitInTheWindowAddsItsEdge) {
  const struct {
    const char* trace;
    int64_t event_sync_edges;  // HTA's edges from Event Sync and Stream Wait Event
  } cases[] = {
      {"hta-critical_path_cuda_event_sync_event_sync_trace.json.gz", 2},  // two Event Sync
      {"hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", 3},  // 2 + 1
      {"hta-critical_path_alexnet_trace.json.gz", 3},  // three Stream Wait Event
  };
  for (const auto& c : cases) {
    const CriticalPath cp = ours(c.trace);
    ASSERT_TRUE(cp.computed) << c.trace << ": " << cp.not_computed_reason;
    EXPECT_EQ(cp.event_sync_edges, c.event_sync_edges) << c.trace;
  }
}

}  // namespace
}  // namespace fleetscope::analyzer
