// The step-time tail on the daemon's Prometheus page: on a shared real trace, the rows analyze()
// stores (HostStore::step_tail_rows) come back as each workflow's latest window
// (workflow_step_tails) and are exposed as gauges with the workflow's labels, equal to the
// analyzer's step_stats (nearest-rank p50/p90/p99, jitter = std / mean; analyzer/metrics.h).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/prometheus.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

// The value of the exposition line that starts with `series` (name and labels), NaN if none.
double sample_value(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(series + ' ', 0) == 0) return std::stod(line.substr(series.size() + 1));
  ADD_FAILURE() << "no series " << series << " in\n" << text;
  return std::nan("");
}

TEST(PrometheusStepTail, GaugesEqualTheAnalyzersStepStatsOnARealTrace) {
  // ns_resolution: PyTorch profiler steps #101-105 of one process (tests/data/README.md); the
  // steps HTA counts are #101-104 (the last, cut by the capture's end, is not a step).
  const analyzer::CaptureData data =
      analyzer::load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) +
                                "/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz");
  const auto by_workflow = analyzer::step_durations_by_workflow(data);
  ASSERT_EQ(by_workflow.size(), 1u) << "one process, one workflow";
  const std::string workflow = by_workflow.begin()->first;
  const analyzer::StepStats expected = analyzer::step_stats(by_workflow.begin()->second);
  ASSERT_EQ(expected.count, 4);
  ASSERT_LT(expected.median_ns, expected.p99_ns) << "the trace's steps differ in length";

  test_support::TempDir dir;
  HostStore store(dir.file("host.db"), "node-1");
  // An older window with other values: the page shows the latest one.
  const auto rows = HostStore::step_tail_rows(data);
  ASSERT_FALSE(rows.empty());
  std::vector<WorkflowMetricRow> older = rows;
  for (auto& row : older) {
    row.row.window_start -= 3'600'000'000'000, row.row.window_end -= 3'600'000'000'000;
    row.row.value *= 7;
  }
  store.add_workflow_metrics(older);
  store.add_workflow_metrics(rows);

  ExpositionInput input;
  input.hostname = "node-1";
  input.workflow_step_tails = store.workflow_step_tails();
  ASSERT_EQ(input.workflow_step_tails.size(), 1u);
  EXPECT_EQ(input.workflow_step_tails.at(workflow).steps, 4);
  input.workflow_labels[workflow] = {"slurm_job_id=80"};
  const std::string text = render_exposition(input);

  const std::string labels =
      "{Hostname=\"node-1\",workflow=\"" + escape_label_value(workflow) + "\",slurm_job_id=\"80\"";
  EXPECT_NE(text.find("# TYPE fleetscope_workflow_step_time_seconds gauge\n"), std::string::npos);
  EXPECT_DOUBLE_EQ(
      sample_value(text, "fleetscope_workflow_step_time_seconds" + labels + ",quantile=\"0.5\"}"),
      double(expected.median_ns) / 1e9);
  EXPECT_DOUBLE_EQ(
      sample_value(text, "fleetscope_workflow_step_time_seconds" + labels + ",quantile=\"0.9\"}"),
      double(expected.p90_ns) / 1e9);
  EXPECT_DOUBLE_EQ(
      sample_value(text, "fleetscope_workflow_step_time_seconds" + labels + ",quantile=\"0.99\"}"),
      double(expected.p99_ns) / 1e9);
  EXPECT_DOUBLE_EQ(sample_value(text, "fleetscope_workflow_step_time_jitter_ratio" + labels + "}"),
                   expected.jitter);
  EXPECT_DOUBLE_EQ(sample_value(text, "fleetscope_workflow_steps" + labels + "}"), 4.0);
}

TEST(PrometheusStepTail, NoSeriesWithoutAnAnalysedWindow) {
  ExpositionInput input;
  input.hostname = "node-1";
  const std::string text = render_exposition(input);
  EXPECT_EQ(text.find("fleetscope_workflow_step_time"), std::string::npos)
      << "no invented step times";
}

}  // namespace
}  // namespace fleetscope::daemon
