// The tail_steps rule on real traces. Of the shared Kineto traces only two record three or more
// ProfilerSteps, and neither has a tail: ns_resolution's slow steps are its first two (warm-up,
// faster), nccl_parser_config's three steps lie within 2.4 % of each other. A step is what HTA
// counts (counted_steps(): not the last ProfilerStep), so ns_resolution has four steps and
// nccl_parser_config two (below the rule's min_steps). Their step times below are the
// ProfilerStep# user_annotation durations in the trace files themselves (read with Python's
// Decimal, ns), not fleetscope's output. Then the same real trace with one
// step edited to stall: a 100 ms pause inserted inside step 104 at an instant when the GPU is
// idle (every time after it moves 100 ms later, what spans it gets 100 ms longer), the way a
// host-side hiccup (GC, a blocking host call) would.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;
constexpr int64_t kMs = 1'000'000;

CaptureData shared_trace(const std::string& name) {
  return load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + name);
}

std::vector<store::Finding> tail_findings(const CaptureData& data) {
  AnalyzeOptions options;
  options.rules = {"tail_steps"};
  return analyze(data, options);
}

TEST(TailStepsOnRealTraces, SharedTracesHaveNoTail) {
  const struct {
    const char* trace;
    int64_t steps, p50_ns, p99_ns;
  } cases[] = {
      // ProfilerStep#101..105: 35.116, 72.077, 95.697, 95.551, 95.699 ms; #105 is not a step.
      {"hta-ns_resolution_trace_rank-0.json.gz", 4, 72'077'474, 95'697'341},
      // ProfilerStep#4..6: 222.442191, 219.726905, 224.936243 ms; #6 is not a step.
      {"hta-nccl_parser_config_nccl_data.json.gz", 2, 219'726'905, 222'442'191},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.trace);
    const CaptureData data = shared_trace(c.trace);
    const StepStats stats = step_stats(data);
    EXPECT_EQ(stats.count, c.steps);
    EXPECT_NEAR(double(stats.median_ns), double(c.p50_ns), 1.0);  // µs with 3 decimals: exact
    EXPECT_NEAR(double(stats.p99_ns), double(c.p99_ns), 1.0);
    EXPECT_TRUE(tail_findings(data).empty()) << "p50 / p99 is above 0.7";
  }
}

// Every time at or after `at` moves `pause` later; what spans `at` (starts before, ends after)
// ends `pause` later.
void insert_pause(CaptureData& data, int64_t at, int64_t pause) {
  const auto shift = [&](int64_t& t) {
    if (t >= at) t += pause;
  };
  const auto shift_span = [&](int64_t& start, int64_t& end) {
    if (start >= at)
      start += pause, end += pause;
    else if (end > at)
      end += pause;  // spans the instant
  };
  for (size_t i = 0; i < data.gpu.size(); ++i) shift_span(data.gpu.start[i], data.gpu.end[i]);
  for (size_t i = 0; i < data.runtime.size(); ++i)
    shift_span(data.runtime.start[i], data.runtime.end[i]);
  for (size_t i = 0; i < data.gpu_syncs.size(); ++i)
    shift_span(data.gpu_syncs.start[i], data.gpu_syncs.end[i]);
  for (auto* ranges : {&data.cpu_ops, &data.dataloader_ops, &data.gpu_annotations})
    for (HostRange& r : *ranges) shift_span(r.start, r.end);
  for (store::Iteration& it : data.iterations) shift_span(it.start, it.end);
  for (store::MemoryEvent& m : data.memory) shift(m.ts);
  data.finalize();  // the busy intervals and indexes again
}

TEST(TailStepsOnRealTraces, OneStalledStepOfARealTraceFiresAndNamesTheIdleGpu) {
  CaptureData data = shared_trace("hta-ns_resolution_trace_rank-0.json.gz");
  const auto step = std::find_if(data.iterations.begin(), data.iterations.end(),
                                 [](const store::Iteration& it) { return it.step == 104; });
  ASSERT_NE(step, data.iterations.end());
  // The first instant inside the step when no GPU work runs.
  int64_t at = step->start + 1;
  for (const auto& [device, busy] : data.busy_by_device)
    for (const Interval& b : busy)
      if (b.begin <= at && at < b.end) at = b.end;
  ASSERT_LT(at, step->end);
  const int64_t stalled_ns = step->end - step->start + 100 * kMs;
  insert_pause(data, at, 100 * kMs);

  const auto findings = tail_findings(data);
  ASSERT_EQ(findings.size(), 1u);
  const json e = json::parse(findings[0].evidence_json);
  // The steps are #101..104 (#105, the last, is not a step): the median is step 102.
  EXPECT_EQ(e.at("p50_ns"), 72'077'474);
  EXPECT_EQ(e.at("p99_ns"), stalled_ns);
  EXPECT_EQ(e.at("slow_steps"), 1);
  EXPECT_EQ(e.at("slowest").at(0).at("step"), 104);
  EXPECT_EQ(findings[0].impact_ns, stalled_ns - 72'077'474);
  // The pause is GPU idle time: the largest excess over the median step, by about the pause.
  EXPECT_EQ(e.at("coincides").at(0).at("what"), "GPU idle (host-bound: launches, Python, GC)");
  EXPECT_NEAR(e.at("coincides").at(0).at("excess_ns").get<double>(), 100.0 * kMs, 2.0 * kMs);
}

}  // namespace
}  // namespace fleetscope::analyzer
