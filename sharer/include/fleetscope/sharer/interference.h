#pragma once
// Interference model: the predicted slowdown of a job that shares a GPU.
//
// Lanes run in parallel. A job whose lane demands u_L (sum of its jobs' utilization, capped at 1)
// on a GPU whose lanes demand U in total:
//   slowdown = max(1, U) * (1 + alpha * min(1, U - u_L))
// max(1, U): the GPU's throughput bound: once the lanes ask for more than one GPU, everyone is
// stretched proportionally. alpha: extra contention (memory bandwidth, caches) per unit of
// neighbour load. The neighbour load is capped at one GPU, so the contention term is bounded by
// (1 + alpha) however many lanes share the GPU (an unbounded term slowed 22 compute-bound lanes
// 68x each). alpha is fitted by `calibrate_interference` from co-location measurements (the GPU
// check writes them: scripts/gpu-check, co-location section); until measured it is 0, which makes
// the model the throughput bound alone (documented in docs/sharer.md).
// Inside one lane jobs take turns, one iteration at a time; their GPU phases serialise while host
// phases (input pipeline, Python) overlap. Round robin bounds job i's period by its own
// iteration plus one GPU phase of every other member, so job i in lane L slows by at most
//   1 + sum_{j in L, j != i} u_j t_j / t_i.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fleetscope::sharer {

struct ColocationObservation {
  double own_utilization = 0;     // u of the measured job alone
  double others_utilization = 0;  // sum of the neighbours' u
  double measured_slowdown = 1;   // iteration time shared / alone
};

struct InterferenceModel {
  double alpha = 0.0;

  // `lane_demand` is the job's own lane demand, `gpu_demand` the sum over all lanes on the GPU.
  double parallel_slowdown(double lane_demand, double gpu_demand) const;
};

// Fits alpha to measured co-location runs; returns `prior` when there is nothing to fit.
InterferenceModel calibrate_interference(const std::vector<ColocationObservation>& runs,
                                         InterferenceModel prior = InterferenceModel{});

// Reads co-location measurements: CSV with the header
// own_utilization,others_utilization,measured_slowdown (more columns are ignored), as written by
// the co-location section of scripts/gpu-check. Throws std::runtime_error naming file, line and
// column.
// Lines starting with '#' are comments (a file states its source there).
std::vector<ColocationObservation> load_colocation_runs(const std::string& path);
// The same over text in memory; `source` names it in errors.
std::vector<ColocationObservation> parse_colocation_runs(std::string_view text,
                                                         const std::string& source);

// Root-mean-square relative error of the model's prediction on `runs`.
double prediction_rms_error(const InterferenceModel& model,
                            const std::vector<ColocationObservation>& runs);

// How well the model predicts `runs`: absolute errors in slowdown units (|predicted - measured|),
// and the share of runs it predicts faster than measured (optimistic).
struct PredictionErrors {
  size_t runs = 0;
  double rms_relative = 0;
  double median_absolute = 0;
  double p90_absolute = 0;
  double max_absolute = 0;
  double optimistic_share = 0;
};
PredictionErrors prediction_errors(const InterferenceModel& model,
                                   const std::vector<ColocationObservation>& runs);

// The interference parameters a command uses, and where they came from (the commands print it).
struct InterferenceCalibration {
  InterferenceModel model;
  std::string source;       // "published", "calibration" or "flag"
  std::string description;  // one line for the output
  size_t runs = 0;          // observations fitted (0 for "flag")
};

// The published co-location runs compiled into the library (sharer/data/gavel_v100_colocation.csv:
// Gavel, Narayanan et al., OSDI 2020, V100 pairs; the file's header says how they were derived).
const std::vector<ColocationObservation>& published_colocation_runs();
// Those runs fitted by calibrate_interference: the default until a local calibration exists.
const InterferenceCalibration& published_interference();
// A local calibration file (the GPU check's output, same format), fitted the same way; a file with
// no informative run (no neighbour load) keeps the published fit.
InterferenceCalibration interference_from_file(const std::string& path);
// A value given on the command line.
InterferenceCalibration interference_from_flag(double alpha);
// {"alpha", "source", "runs", "description"}: what `sim` and `share plan` print in JSON.
nlohmann::json interference_to_json(const InterferenceCalibration& calibration);

struct LaneMember {
  double utilization = 0;
  double iteration_s = 0;
};
// Worst-case slowdown of members[index] from taking turns with the rest of its lane (the bound
// the planner enforces).
double time_sharing_slowdown(const std::vector<LaneMember>& members, size_t index);
// Expected slowdown: the mean of the bound and the fluid estimate max(1, sum_j u_j t_j / t_i)
// (the simulator's round robin lies between the two; the planner reports this).
double time_sharing_estimate(const std::vector<LaneMember>& members, size_t index);

}  // namespace fleetscope::sharer
