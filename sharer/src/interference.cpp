#include "fleetscope/sharer/interference.h"

#include <algorithm>
#include <cmath>

#include "csv.h"

namespace fleetscope::sharer {

namespace {
double bounded_others(double others) {
  return std::clamp(others, 0.0, 1.0);
}
}  // namespace

double InterferenceModel::parallel_slowdown(double lane_demand, double gpu_demand) const {
  const double others = bounded_others(gpu_demand - lane_demand);
  return std::max(1.0, gpu_demand) * (1.0 + alpha * others);
}

InterferenceModel calibrate_interference(const std::vector<ColocationObservation>& runs,
                                         InterferenceModel prior) {
  // slowdown / max(1, U) - 1 = alpha * min(1, others): least squares through the origin.
  double xy = 0;
  double xx = 0;
  for (const auto& run : runs) {
    const double total = run.own_utilization + run.others_utilization;
    const double x = bounded_others(run.others_utilization);
    const double y = run.measured_slowdown / std::max(1.0, total) - 1.0;
    xy += x * y;
    xx += x * x;
  }
  if (xx <= 0) return prior;
  return InterferenceModel{std::max(0.0, xy / xx)};
}

namespace {
std::vector<ColocationObservation> colocation_runs_from(const csv::Table& table) {
  const std::string& path = table.path;
  const size_t own = table.column("own_utilization");
  const size_t others = table.column("others_utilization");
  const size_t slowdown = table.column("measured_slowdown");
  if (table.rows.empty()) csv::fail(path, 2, "at least one measurement row after the header");
  std::vector<ColocationObservation> runs;
  for (const auto& row : table.rows) {
    ColocationObservation run;
    run.own_utilization = csv::to_double_in(table, row, own, "own_utilization", 0.0, 1.0);
    run.others_utilization = csv::to_double_in(table, row, others, "others_utilization", 0.0, 1e6);
    run.measured_slowdown = csv::to_double_in(table, row, slowdown, "measured_slowdown", 1e-3, 1e6);
    runs.push_back(run);
  }
  return runs;
}
}  // namespace

std::vector<ColocationObservation> load_colocation_runs(const std::string& path) {
  return colocation_runs_from(
      csv::read(path, /*has_header=*/true, /*min_fields=*/0, /*skip_comments=*/true));
}

std::vector<ColocationObservation> parse_colocation_runs(std::string_view text,
                                                         const std::string& source) {
  return colocation_runs_from(
      csv::parse(text, source, /*has_header=*/true, /*min_fields=*/0, /*skip_comments=*/true));
}

double prediction_rms_error(const InterferenceModel& model,
                            const std::vector<ColocationObservation>& runs) {
  if (runs.empty()) return 0;
  double sum = 0;
  for (const auto& run : runs) {
    // Each measured job is alone in its lane (u_L = own), neighbours in other lanes.
    const double predicted =
        model.parallel_slowdown(run.own_utilization, run.own_utilization + run.others_utilization);
    const double error = (predicted - run.measured_slowdown) / run.measured_slowdown;
    sum += error * error;
  }
  return std::sqrt(sum / static_cast<double>(runs.size()));
}

PredictionErrors prediction_errors(const InterferenceModel& model,
                                   const std::vector<ColocationObservation>& runs) {
  PredictionErrors errors;
  errors.runs = runs.size();
  if (runs.empty()) return errors;
  std::vector<double> absolute;
  absolute.reserve(runs.size());
  size_t optimistic = 0;
  for (const auto& run : runs) {
    const double predicted =
        model.parallel_slowdown(run.own_utilization, run.own_utilization + run.others_utilization);
    absolute.push_back(std::abs(predicted - run.measured_slowdown));
    if (predicted < run.measured_slowdown) ++optimistic;
  }
  std::sort(absolute.begin(), absolute.end());
  // Nearest-rank quantiles: the smallest error at least q of the runs do not exceed.
  const auto quantile = [&](double q) {
    const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(absolute.size())));
    return absolute[std::clamp<size_t>(rank, 1, absolute.size()) - 1];
  };
  errors.rms_relative = prediction_rms_error(model, runs);
  errors.median_absolute = quantile(0.5);
  errors.p90_absolute = quantile(0.9);
  errors.max_absolute = absolute.back();
  errors.optimistic_share = static_cast<double>(optimistic) / static_cast<double>(runs.size());
  return errors;
}

double time_sharing_slowdown(const std::vector<LaneMember>& members, size_t index) {
  if (index >= members.size() || members[index].iteration_s <= 0) return 1.0;
  // Round robin at iteration boundaries: when job i's host phase ends it may find every other
  // member's GPU phase ahead of it, once each, so its period is at most
  // (1 - u_i) t_i + sum_j u_j t_j = t_i + sum_{j != i} u_j t_j. The fluid estimate
  // max(t_i, sum_j u_j t_j) ignores that wait and was up to 1.6x optimistic against the
  // simulator; the bound is what a slowdown guarantee needs.
  double others = 0;
  for (size_t j = 0; j < members.size(); ++j) {
    if (j != index) others += members[j].utilization * members[j].iteration_s;
  }
  return 1.0 + others / members[index].iteration_s;
}

double time_sharing_estimate(const std::vector<LaneMember>& members, size_t index) {
  if (index >= members.size() || members[index].iteration_s <= 0) return 1.0;
  double gpu_busy_per_round = 0;
  for (const auto& member : members) gpu_busy_per_round += member.utilization * member.iteration_s;
  const double fluid = std::max(1.0, gpu_busy_per_round / members[index].iteration_s);
  return 0.5 * (fluid + time_sharing_slowdown(members, index));
}

}  // namespace fleetscope::sharer
