#pragma once
// Interference model: the predicted slowdown of a job that shares a GPU.
//
// Lanes run in parallel. The GPU phases of a job whose lane demands u_L (sum of its jobs'
// utilization, capped at 1) on a GPU whose lanes demand U in total take
//   p * (1 + alpha * min(1, U - u_L))
// times as long, its host phases are not stretched. p: the GPU's throughput bound
// (throughput_stretch: once the lanes ask for more than one GPU, GPU phases are stretched until
// their work fits; max(1, U) when every lane is compute-bound). alpha: extra contention (memory
// bandwidth, caches) per unit of neighbour load. The neighbour load is capped at one GPU, so the
// contention term is bounded by (1 + alpha) however many lanes share the GPU (an unbounded term
// slowed 22 compute-bound lanes 68x each). alpha is fitted by `fit_interference` to co-location
// runs whose utilizations were measured with each job alone (scripts/gpu-check, co-location
// section) and used only when it predicts held-out pairs better than alpha = 0; otherwise alpha is
// 0 ("no model": the throughput bound alone; slowdowns are bounded by what was measured). The
// published Gavel pairs are not fitted: their utilizations were derived from the same slowdowns
// (docs/sharer.md). Inside one lane jobs take turns, one iteration at a time; their GPU phases
// serialise while host phases (input pipeline, Python) overlap. Round robin bounds job i's period
// by its own iteration plus one GPU phase of every other member, so job i in lane L slows by at
// most
//   1 + sum_{j in L, j != i} u_j t_j / t_i.

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fleetscope::sharer {

struct ColocationObservation {
  double own_utilization = 0;     // u of the measured job alone
  double others_utilization = 0;  // sum of the neighbours' u
  double measured_slowdown = 1;   // iteration time shared / alone
  std::string pair;               // "measured+neighbour" (optional `pair` column)
  // Whether both utilizations were measured with each job alone, independently of the slowdown
  // (optional `utilization_source` column: measured_alone, the default, or
  // derived_from_slowdown). Derived runs are never fitted: that would be circular.
  bool utilization_measured = true;
};

// The throughput bound of parallel lanes whose contention stretches GPU phases only: the factor
// p >= 1 on every lane's GPU phases at which their GPU work fits one GPU,
//   sum_l d_l / (1 + d_l (p - 1)) = 1   (d_l: lane demand, capped at 1),
// 1 when sum d_l <= 1. A lane at demand d spends d of its time alone in GPU phases; stretched by p
// its iteration takes 1 + d (p - 1) times as long and it does d / (1 + d (p - 1)) GPU-seconds
// of work per second. Compute-bound lanes (d = 1) give p = the number of lanes: max(1, U).
double throughput_stretch(const std::vector<double>& lane_demands);

struct InterferenceModel {
  double alpha = 0.0;
  // Measured contention per ordered workload pair, "measured+neighbour" -> alpha (the pair
  // terms of a calibration, fitted on runs whose utilizations were measured alone:
  // InterferenceFit::pair_terms). A pair that was measured is predicted from its own runs,
  // whatever the global fit says: A next to B and B next to A differ (on the H100, a full-duty
  // GEMM next to a half-duty one: alpha 0.84; the half-duty one next to it: 0). The planner
  // (jobs labelled workload=NAME) and the simulator (SimJob::workload) both apply them through
  // lane_factor.
  std::map<std::string, double> pair_alpha;
  // Cross-validated asymmetric terms for pairs nobody measured (InterferenceFit::asymmetric):
  // a job of workload A next to one of workload B gets alpha = sensitivity[A] * pressure[B], so
  // A hurts B and B hurts A differ. `sensitivity` holds only the workloads whose held-out error
  // with these terms beats alpha = 0; a pair with a name missing from either map gets `alpha`.
  std::map<std::string, double> sensitivity;
  std::map<std::string, double> pressure;

  // The factor on the GPU phases of lane `lane` among lanes demanding `lane_demands` whose jobs
  // run the workloads `lane_workloads` (one name per job, "" unnamed; an empty vector: every job
  // unnamed): the throughput bound times the contention of the lane's worst member, each member's
  // term alpha_next_to(its workload, the workloads of the other lanes). The one definition the
  // planner's prediction and the simulator's lane speed share.
  double lane_factor(size_t lane, const std::vector<double>& lane_demands,
                     const std::vector<std::vector<std::string>>& lane_workloads) const;

  // The contention term of a job of workload `own` whose GPU also runs jobs of workloads
  // `neighbours` in other lanes (one entry per job): the largest, over the neighbours, of the
  // measured pair term own+neighbour, or `alpha` for a neighbour never measured next to `own`
  // (and for unnamed workloads). `alpha` when there is no neighbour.
  double alpha_next_to(const std::string& own, const std::vector<std::string>& neighbours) const;
  // The term of `own` next to one `neighbour`: the measured pair term, else the asymmetric term
  // (sensitivity x pressure) where both are known, else `alpha`.
  double alpha_of_pair(const std::string& own, const std::string& neighbour) const;
  // The smallest term the model can give any pair (a screen that must never be pessimistic).
  double smallest_term() const;
  // Whether any term depends on the workloads (pair terms or asymmetric terms).
  bool has_workload_terms() const { return !pair_alpha.empty() || !sensitivity.empty(); }
  // parallel_slowdown(lane, lane_demands) with the contention term `job_alpha`.
  double parallel_slowdown_with(double job_alpha, size_t lane,
                                const std::vector<double>& lane_demands) const;

  // Factor on the GPU phases of lane `lane` among `lane_demands` (each capped at 1):
  // throughput_stretch(lane_demands) * (1 + alpha * min(1, U - d_lane)).
  double parallel_slowdown(size_t lane, const std::vector<double>& lane_demands) const;
  // The same for a job whose lane demands `lane_demand` on a GPU whose lanes demand `gpu_demand`
  // in all, the neighbours' demand taken as lanes of one GPU each plus one lane of the rest.
  double parallel_slowdown(double lane_demand, double gpu_demand) const;
  // What a co-location run measures: the whole iteration of a job at utilization u alone in its
  // lane, u * parallel_slowdown(u, gpu_demand) + (1 - u) (its host phase is not stretched).
  double iteration_slowdown(double utilization, double gpu_demand) const;
};

// Least-squares alpha over the runs with measured utilizations; `prior` when there is none.
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

// One ordered pair's own contention term: how much the neighbour slows the measured job (A next
// to B and B next to A are fitted apart: co-location slowdowns are not symmetric).
struct PairTerm {
  std::string pair;  // "measured+neighbour"
  double alpha = 0;
  size_t runs = 0;
};

// The asymmetric model of one workload: how much it suffers next to others (sensitivity, as the
// measured job) and how much it hurts them (pressure, as the neighbour); a pair's term is
// sensitivity[measured] * pressure[neighbour]. Held-out: its runs as the measured job, each
// predicted by the terms fitted without that run's unordered pair.
struct WorkloadTerms {
  std::string workload;
  double sensitivity = 0;
  double pressure = 0;
  size_t held_out_runs = 0;
  double rms_relative_model = 0;  // held out
  double rms_relative_zero = 0;   // alpha = 0 on the same runs
  bool used = false;              // the model beats alpha = 0 on them
};
struct AsymmetricFit {
  std::vector<WorkloadTerms> workloads;
  size_t groups = 0;  // unordered pairs held out
  size_t runs = 0;
  double rms_relative_model = 0;
  double rms_relative_zero = 0;
  double median_absolute_model = 0;
  double median_absolute_zero = 0;
};

// Errors on pairs the fit did not see: leave one unordered pair out (every run of A+B and B+A is
// predicted by the alpha fitted to the other pairs; unnamed runs are left out one at a time),
// beside alpha = 0 on the same runs.
struct HeldOutErrors {
  size_t groups = 0;
  size_t runs = 0;
  double rms_relative_fitted = 0;
  double rms_relative_zero = 0;
  double median_absolute_fitted = 0;
  double median_absolute_zero = 0;
};

// The honest fit over the runs with measured utilizations: `model` is the fitted alpha only
// when it beats alpha = 0 on held-out pairs (lower RMS relative and median absolute error),
// otherwise alpha = 0.
struct InterferenceFit {
  InterferenceModel model;
  double fitted_alpha = 0;
  bool model_used = false;
  size_t runs_fitted = 0;
  size_t runs_excluded = 0;  // utilization derived from the slowdown
  HeldOutErrors held_out;
  std::vector<PairTerm> pair_terms;
  // Sensitivity x pressure per workload, fitted to the named runs (alternating least squares,
  // non-negative), cross-validated by leaving each unordered pair out; `model` carries the terms
  // of the workloads it predicts better than alpha = 0.
  AsymmetricFit asymmetric;
  std::string verdict;  // one line: what is used and why
};
InterferenceFit fit_interference(const std::vector<ColocationObservation>& runs);

// The interference parameters a command uses, and where they came from (the commands print it).
struct InterferenceCalibration {
  InterferenceModel model;
  std::string source;       // "published", "calibration" or "flag"
  std::string description;  // one line for the output
  size_t runs = 0;          // observations read (0 for "flag")
  bool model_used = true;   // false: "no model", alpha = 0, bounded by measured slowdown only
};

// The published co-location runs compiled into the library (sharer/data/gavel_v100_colocation.csv:
// Gavel, Narayanan et al., OSDI 2020, V100 pairs; the file's header says how they were derived).
const std::vector<ColocationObservation>& published_colocation_runs();
// The default until a local calibration exists: those runs put through fit_interference. None
// has measured utilizations, so it is "no model" (alpha = 0), and its description says why.
const InterferenceCalibration& published_interference();
// A local calibration file (the GPU check's output, same format) put through fit_interference.
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
// The same with the lane's GPU phases stretched by the parallel contention factor `parallel` and
// its host phases not (as the simulator runs them): each member's iteration becomes
// t (u p + 1 - u) with utilization u p / (u p + 1 - u); the slowdown is against t alone.
double contended_time_sharing(const std::vector<LaneMember>& members, size_t index, double parallel,
                              bool estimate);
// The largest parallel factor p at which contended_time_sharing(members, index, p, false) stays
// within `bound`: (bound - 1 + u_i) / (u_i + sum_{j != i} u_j t_j / t_i).
double tolerated_parallel_slowdown(const std::vector<LaneMember>& members, size_t index,
                                   double bound);

}  // namespace fleetscope::sharer
