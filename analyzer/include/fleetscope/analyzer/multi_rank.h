// Several ranks of one distributed job, one capture each (a Kineto trace per rank, with
// distributedInfo.rank): per-rank step time and compute / communication / idle, and HTA's
// potential stragglers (hta/analyzers/straggler.py, straggler_analysis.py,
// holistictraceanalysis 0.5.0, get_potential_stragglers with its default
// find_stragglers_with_late_start_comm_kernels):
//
//   1. Steps: every ProfilerStep number of any rank. HTA's last-step filter applies first (each
//      rank keeps CPU events starting before its last step and GPU work launched before it), so
//      the kept iterations are the steps of a rank that start before its last step.
//   2. mean_iter_time = (latest end − earliest start of the events in kept iterations, all ranks)
//      / number of kept iterations. An event's iteration: the step containing its start (CPU
//      events) or its launching call's start (GPU events).
//   3. Long communication kernels: names starting "ncclKernel", stream > 0, in a kept iteration,
//      duration >= min_normalized_duration (0.01) × mean_iter_time. Per (rank, stream, iteration,
//      name) the last one (latest start); normalized_start_time = (start − earliest start) /
//      mean_iter_time, normalized duration = duration / mean_iter_time.
//   4. The (stream, name) whose normalized duration has the largest mean over iterations of its
//      sample standard deviation across ranks is the metric kernel.
//   5. Per iteration the ranks whose metric kernel starts at or after the k-th latest start
//      (k = num_candidates) count once; the stragglers are the num_candidates ranks with the
//      highest counts (ties: lower rank first; HTA leaves ties in its unstable sort's order).
//
// The finding (rank_straggler) goes further than HTA: the slowest rank by the time from its
// iteration start to its metric kernel's start is named when the fastest rank's time over its
// time is below 0.7 (nvidia-resiliency-ext straggler detection's relative performance score
// threshold, gpu_relative_perf_threshold default 0.7), with what it spent the extra time on
// compared with the fastest rank: GPU compute, DataLoader, GPU idle.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::analyzer {

struct RankInput {
  int32_t rank = 0;
  std::string source;  // file name, for messages
  const CaptureData* data = nullptr;
};

// The rank a capture belongs to (processes.rank from Kineto distributedInfo), if recorded.
std::optional<int32_t> capture_rank(const CaptureData& data);

struct RankSummary {
  int32_t rank = 0;
  std::string source;
  StepStats steps;
  // HTA temporal breakdown over the rank's devices (sums over devices), plus the union of its
  // communication kernels and the DataLoader time inside its steps.
  int64_t span_ns = 0, compute_ns = 0, non_compute_ns = 0, idle_ns = 0, communication_ns = 0;
  int64_t dataloader_ns = 0;
};
std::vector<RankSummary> rank_summaries(const std::vector<RankInput>& ranks);

struct StragglerMetricRow {
  int32_t rank = 0, stream = 0;
  int64_t iteration = 0;
  std::string kernel;
  int64_t start_ns = 0, duration_ns = 0;
  double normalized_start_time = 0;
};

struct StragglerOptions {
  int num_candidates = 2;                 // HTA num_candidates (n_stragglers)
  double min_normalized_duration = 0.01;  // HTA's duration test
};

struct StragglerAnalysis {
  std::vector<int64_t> iterations;  // kept iterations
  int64_t earliest_start_ns = 0;
  double mean_iter_time_ns = 0;
  std::vector<StragglerMetricRow> metric;  // the metric kernel's rows
  std::vector<int32_t> stragglers;         // HTA get_potential_stragglers
  std::string not_computed;                // why there is no result ("" when there is)
};
StragglerAnalysis potential_stragglers(const std::vector<RankInput>& ranks,
                                       const StragglerOptions& options = {});

// The rank_straggler finding (none when no rank is slow enough); relative_threshold 0.7.
std::optional<store::Finding> rank_straggler_finding(const std::vector<RankInput>& ranks,
                                                     const std::vector<RankSummary>& summaries,
                                                     const StragglerAnalysis& stragglers,
                                                     double relative_threshold = 0.7);

// Everything above for one job, and its renderings (`fleetscope analyze rank*.json.gz`).
struct MultiRankResult {
  std::vector<RankSummary> summaries;
  StragglerAnalysis stragglers;
  std::optional<store::Finding> finding;
};
MultiRankResult analyze_ranks(const std::vector<RankInput>& ranks);
nlohmann::json multi_rank_json(const MultiRankResult& result);
std::vector<std::string> multi_rank_lines(const MultiRankResult& result);

}  // namespace fleetscope::analyzer
