// Fleet view: rank jobs (workflows) across one or more trace databases by wasted GPU-hours.
// A job's GPU-hours on a GPU = the window of its GPU utilization (gpu_utilization.h: its steps'
// span when it recorded steps, else its first-to-last GPU-event span on that GPU); wasted = the
// idle time inside that window; utilization = the GPU utilization, Σ busy / Σ window. The
// findings of each capture (capture_findings() in analysis.h: analysed now, as `analyze` and
// `report` show them) add their summed impact as a second column.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/common/capture_choice.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {

struct WorkflowWaste {
  std::string workflow;
  std::string user;
  int64_t captures = 0;
  int64_t devices = 0;             // (capture, device) pairs the job used
  int64_t span_ns = 0;             // summed per-device GPU-utilization windows (GPU time held)
  int64_t busy_ns = 0;             // summed GPU work inside them
  int64_t idle_ns = 0;             // span − busy
  int64_t findings_impact_ns = 0;  // summed impact of the findings on the job's captures
  std::string top_rule;            // the rule with the largest summed impact, if any
  int64_t top_rule_impact_ns = 0;  // that rule's summed impact on the job
  // The job's captures: (source name, capture id), sorted.
  std::vector<std::pair<std::string, int64_t>> capture_refs;
  // The tail, not only the median: step_stats() over the counted steps (counted_steps(),
  // metrics.h) of the job in every database (nearest-rank p50/p90/p99, jitter = std / mean);
  // count 0 without steps.
  StepStats steps;
  double gpu_hours() const { return double(span_ns) / 3.6e12; }
  double wasted_gpu_hours() const { return double(idle_ns) / 3.6e12; }
  double utilization() const { return utilization_ratio(busy_ns, span_ns); }
};

// A capture without GPU activity (no kernel, copy or memset: a CPU-only rank, a trace of the
// host side of a job). It holds no GPU time, so it is not ranked; `fleet` lists it after the
// ranking (0 GPU-hours) so that no input is left out without a word.
struct CaptureWithoutGpu {
  std::string workflow;  // the job of its processes (attribution.h), one entry per job
  std::string user;
  std::string source;  // the input it was read from, as given
  int64_t capture = 0;
};

using FleetProgress = std::function<void(const std::string& database, size_t index, size_t total)>;

// The ranking as `fleetscope fleet` prints it: format "table", "json" or "csv". Also used for
// the ranking computed from Prometheus (`fleetscope fleet --prometheus URL`), where the rows may be
// Slurm jobs or pods instead of workflows: `name_column` names the first column then. The
// captures without GPU activity follow the ranking in every format: a section of the table, and
// rows with gpu_activity false (devices 0, 0 GPU-hours, no utilization) in JSON and CSV.
void write_fleet_ranking(const std::vector<WorkflowWaste>& ranking, const std::string& format,
                         std::ostream& out, const std::string& name_column = "workflow",
                         const std::vector<CaptureWithoutGpu>& without_gpu = {});

// Jobs with the same name across databases are merged. Sorted by wasted time, largest first.
// Each path is anything importers/open_input.h opens (a fleetscope database, a Kineto trace, an
// nsys SQLite export); `captures`: every capture, or the one with that id in each input (an
// input without it contributes nothing). `without_gpu`, when given, receives the captures that
// had no GPU activity, in input order.
std::vector<WorkflowWaste> rank_workflows(const std::vector<std::string>& database_paths,
                                          const FleetProgress& progress = {},
                                          const common::CaptureChoice& captures = {},
                                          std::vector<CaptureWithoutGpu>* without_gpu = nullptr);

// The same ranking over sources that are already open (the analysis session's, session.h):
// `open(i)` gives a new read-only reader of source i (called on worker threads), `names[i]` is
// what capture_refs and progress call it.
using ReaderFactory = std::function<std::shared_ptr<const store::Reader>(size_t index)>;
std::vector<WorkflowWaste> rank_sources(const std::vector<std::string>& names,
                                        const ReaderFactory& open,
                                        const FleetProgress& progress = {},
                                        const common::CaptureChoice& captures = {},
                                        std::vector<CaptureWithoutGpu>* without_gpu = nullptr);

}  // namespace fleetscope::analyzer
