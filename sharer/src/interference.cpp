#include "fleetscope/sharer/interference.h"
#include "stretched_lane.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "csv.h"

namespace fleetscope::sharer {

namespace {
double bounded_others(double others) {
  return std::clamp(others, 0.0, 1.0);
}
}  // namespace

double throughput_stretch(const std::vector<double>& lane_demands) {
  double total = 0;
  for (double demand : lane_demands) total += std::clamp(demand, 0.0, 1.0);
  if (total <= 1.0) return 1.0;
  const auto work = [&](double stretch) {
    double sum = 0;
    for (double demand : lane_demands) {
      const double d = std::clamp(demand, 0.0, 1.0);
      sum += d / (1.0 + d * (stretch - 1.0));
    }
    return sum;
  };
  // work() falls from total > 1 at p = 1 to at most (lanes / p) <= 1 at p = lanes.
  double low = 1.0;
  double high = std::max(1.0, static_cast<double>(lane_demands.size()));
  for (int step = 0; step < 100 && high - low > 1e-12 * high; ++step) {
    const double middle = 0.5 * (low + high);
    (work(middle) > 1.0 ? low : high) = middle;
  }
  return high;
}

double InterferenceModel::parallel_slowdown(size_t lane,
                                            const std::vector<double>& lane_demands) const {
  return parallel_slowdown_with(alpha, lane, lane_demands);
}

double InterferenceModel::parallel_slowdown_with(double job_alpha, size_t lane,
                                                 const std::vector<double>& lane_demands) const {
  double total = 0;
  for (double demand : lane_demands) total += std::clamp(demand, 0.0, 1.0);
  const double own = lane < lane_demands.size() ? std::clamp(lane_demands[lane], 0.0, 1.0) : 0.0;
  return throughput_stretch(lane_demands) * (1.0 + job_alpha * bounded_others(total - own));
}

double InterferenceModel::alpha_of_pair(const std::string& own,
                                        const std::string& neighbour) const {
  if (own.empty() || neighbour.empty()) return alpha;
  const auto measured = pair_alpha.find(own + "+" + neighbour);
  if (measured != pair_alpha.end()) return measured->second;
  const auto suffers = sensitivity.find(own);
  const auto hurts = pressure.find(neighbour);
  if (suffers != sensitivity.end() && hurts != pressure.end()) {
    return suffers->second * hurts->second;
  }
  return alpha;
}

double InterferenceModel::alpha_next_to(const std::string& own,
                                        const std::vector<std::string>& neighbours) const {
  if (neighbours.empty()) return alpha;
  double term = 0;
  for (const auto& neighbour : neighbours) term = std::max(term, alpha_of_pair(own, neighbour));
  return term;
}

double InterferenceModel::smallest_term() const {
  double smallest = alpha;
  for (const auto& [pair, term] : pair_alpha) smallest = std::min(smallest, term);
  if (!sensitivity.empty() && !pressure.empty()) {
    double least_sensitivity = std::numeric_limits<double>::infinity();
    double least_pressure = std::numeric_limits<double>::infinity();
    for (const auto& [name, value] : sensitivity)
      least_sensitivity = std::min(least_sensitivity, value);
    for (const auto& [name, value] : pressure) least_pressure = std::min(least_pressure, value);
    smallest = std::min(smallest, least_sensitivity * least_pressure);
  }
  return smallest;
}

double InterferenceModel::lane_factor(
    size_t lane, const std::vector<double>& lane_demands,
    const std::vector<std::vector<std::string>>& lane_workloads) const {
  if (!has_workload_terms() || lane >= lane_workloads.size()) {
    return parallel_slowdown(lane, lane_demands);
  }
  std::vector<std::string> neighbours;
  for (size_t other = 0; other < lane_workloads.size(); ++other) {
    if (other != lane) {
      neighbours.insert(neighbours.end(), lane_workloads[other].begin(),
                        lane_workloads[other].end());
    }
  }
  // The factor grows with the term, so the worst member's term gives the lane's factor.
  double worst = lane_workloads[lane].empty() ? alpha : 0.0;
  for (const auto& own : lane_workloads[lane]) {
    worst = std::max(worst, alpha_next_to(own, neighbours));
  }
  return parallel_slowdown_with(worst, lane, lane_demands);
}

double InterferenceModel::iteration_slowdown(double utilization, double gpu_demand) const {
  const double u = std::clamp(utilization, 0.0, 1.0);
  return u * parallel_slowdown(u, gpu_demand) + 1.0 - u;
}

double InterferenceModel::parallel_slowdown(double lane_demand, double gpu_demand) const {
  std::vector<double> lanes{std::clamp(lane_demand, 0.0, 1.0)};
  double others = std::max(0.0, gpu_demand - lane_demand);
  for (; others >= 1.0 && lanes.size() < 100000; others -= 1.0) lanes.push_back(1.0);
  if (others > 0) lanes.push_back(others);
  return parallel_slowdown(size_t{0}, lanes);
}

namespace {
// A run as a point of the line y = alpha * x: x the neighbours' load (capped at one GPU), y the
// contention its slowdown implies once the throughput bound is taken out (measured = u s (1 +
// alpha x) + 1 - u, s the throughput bound). false for a job with no GPU work.
bool linearized(const ColocationObservation& run, double& x, double& y) {
  const double u = std::clamp(run.own_utilization, 0.0, 1.0);
  if (u <= 0) return false;
  const double total = run.own_utilization + run.others_utilization;
  x = bounded_others(run.others_utilization);
  y = (run.measured_slowdown - 1.0 + u) /
          (u * InterferenceModel{0.0}.parallel_slowdown(run.own_utilization, total)) -
      1.0;
  return true;
}
}  // namespace

InterferenceModel calibrate_interference(const std::vector<ColocationObservation>& runs,
                                         InterferenceModel prior) {
  // Least squares through the origin.
  double xy = 0;
  double xx = 0;
  for (const auto& run : runs) {
    double x = 0;
    double y = 0;
    if (!run.utilization_measured || !linearized(run, x, y)) continue;
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
  const size_t pair = table.has_column("pair") ? table.column("pair") : table.header.size();
  const size_t source = table.has_column("utilization_source") ? table.column("utilization_source")
                                                               : table.header.size();
  if (table.rows.empty()) csv::fail(path, 2, "at least one measurement row after the header");
  std::vector<ColocationObservation> runs;
  for (const auto& row : table.rows) {
    ColocationObservation run;
    run.own_utilization = csv::to_double_in(table, row, own, "own_utilization", 0.0, 1.0);
    run.others_utilization = csv::to_double_in(table, row, others, "others_utilization", 0.0, 1e6);
    run.measured_slowdown = csv::to_double_in(table, row, slowdown, "measured_slowdown", 1e-3, 1e6);
    if (pair < row.fields.size()) run.pair = row.fields[pair];
    if (source < row.fields.size() && !row.fields[source].empty()) {
      const std::string& value = row.fields[source];
      if (value == "derived_from_slowdown") {
        run.utilization_measured = false;
      } else if (value != "measured_alone") {
        csv::fail_value(table, row, source, "utilization_source",
                        "measured_alone or derived_from_slowdown");
      }
    }
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
        model.iteration_slowdown(run.own_utilization, run.own_utilization + run.others_utilization);
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
        model.iteration_slowdown(run.own_utilization, run.own_utilization + run.others_utilization);
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

namespace {

double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

double predict(const InterferenceModel& model, const ColocationObservation& run) {
  return model.iteration_slowdown(run.own_utilization,
                                  run.own_utilization + run.others_utilization);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// "A+B" and "B+A" are one unordered pair.
std::string unordered(const std::string& pair) {
  const size_t plus = pair.find('+');
  if (plus == std::string::npos) return pair;
  std::string a = pair.substr(0, plus);
  std::string b = pair.substr(plus + 1);
  return a < b ? a + "+" + b : b + "+" + a;
}

}  // namespace

namespace {

// A named run: measured workload, neighbour workload and the run as a point of y = alpha x.
struct NamedRun {
  std::string own;
  std::string neighbour;
  double x = 0;
  double y = 0;
  const ColocationObservation* run = nullptr;
};

using Factors = std::map<std::string, double>;

// Non-negative least squares of y = s[own] a[neighbour] x, alternating between s and a (each
// step is a one-variable least squares through the origin per workload). The product is what
// the runs determine; s and a alone only up to a common scale.
void fit_factors(const std::vector<const NamedRun*>& runs, Factors& sensitivity,
                 Factors& pressure) {
  sensitivity.clear();
  pressure.clear();
  for (const auto* run : runs) {
    sensitivity[run->own] = 1.0;
    pressure[run->neighbour] = 0.1;
  }
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    for (auto& [name, value] : sensitivity) {
      double xy = 0;
      double xx = 0;
      for (const auto* run : runs) {
        if (run->own != name) continue;
        const double x = run->x * pressure[run->neighbour];
        xy += x * run->y;
        xx += x * x;
      }
      value = xx > 0 ? std::max(0.0, xy / xx) : 0.0;
    }
    for (auto& [name, value] : pressure) {
      double xy = 0;
      double xx = 0;
      for (const auto* run : runs) {
        if (run->neighbour != name) continue;
        const double x = run->x * sensitivity[run->own];
        xy += x * run->y;
        xx += x * x;
      }
      value = xx > 0 ? std::max(0.0, xy / xx) : 0.0;
    }
  }
}

double factor_term(const Factors& sensitivity, const Factors& pressure, const NamedRun& run) {
  const auto s = sensitivity.find(run.own);
  const auto a = pressure.find(run.neighbour);
  return s == sensitivity.end() || a == pressure.end() ? 0.0 : s->second * a->second;
}

double rms_of(const std::vector<double>& errors) {
  if (errors.empty()) return 0;
  double sum = 0;
  for (double error : errors) sum += error * error;
  return std::sqrt(sum / static_cast<double>(errors.size()));
}

AsymmetricFit fit_asymmetric(const std::vector<const ColocationObservation*>& usable) {
  AsymmetricFit fit;
  std::vector<NamedRun> named;
  for (const auto* run : usable) {
    const size_t plus = run->pair.find('+');
    if (plus == std::string::npos) continue;
    NamedRun each;
    each.own = run->pair.substr(0, plus);
    each.neighbour = run->pair.substr(plus + 1);
    each.run = run;
    if (!linearized(*run, each.x, each.y)) continue;
    named.push_back(each);
  }
  std::map<std::string, std::vector<const NamedRun*>> groups;
  for (const auto& run : named) groups[unordered(run.run->pair)].push_back(&run);
  // Leave one unordered pair out: its runs (both directions) predicted by the rest.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_workload;
  std::vector<double> model_errors, zero_errors, model_absolute, zero_absolute;
  if (groups.size() >= 2) {
    for (const auto& [key, members] : groups) {
      std::vector<const NamedRun*> rest;
      for (const auto& run : named) {
        if (unordered(run.run->pair) != key) rest.push_back(&run);
      }
      Factors sensitivity;
      Factors pressure;
      fit_factors(rest, sensitivity, pressure);
      for (const auto* run : members) {
        const double measured = run->run->measured_slowdown;
        const double with_model =
            predict(InterferenceModel{factor_term(sensitivity, pressure, *run)}, *run->run);
        const double with_zero = predict(InterferenceModel{0.0}, *run->run);
        model_errors.push_back(relative_error(with_model, measured));
        zero_errors.push_back(relative_error(with_zero, measured));
        model_absolute.push_back(std::abs(with_model - measured));
        zero_absolute.push_back(std::abs(with_zero - measured));
        by_workload[run->own].first.push_back(model_errors.back());
        by_workload[run->own].second.push_back(zero_errors.back());
      }
    }
    fit.groups = groups.size();
    fit.runs = model_errors.size();
    fit.rms_relative_model = rms_of(model_errors);
    fit.rms_relative_zero = rms_of(zero_errors);
    fit.median_absolute_model = median(model_absolute);
    fit.median_absolute_zero = median(zero_absolute);
  }
  std::vector<const NamedRun*> all;
  for (const auto& run : named) all.push_back(&run);
  Factors sensitivity;
  Factors pressure;
  fit_factors(all, sensitivity, pressure);
  std::map<std::string, WorkloadTerms> terms;
  for (const auto& [name, value] : sensitivity) terms[name].sensitivity = value;
  for (const auto& [name, value] : pressure) terms[name].pressure = value;
  for (auto& [name, term] : terms) {
    term.workload = name;
    const auto errors = by_workload.find(name);
    if (errors != by_workload.end()) {
      term.held_out_runs = errors->second.first.size();
      term.rms_relative_model = rms_of(errors->second.first);
      term.rms_relative_zero = rms_of(errors->second.second);
      term.used = term.rms_relative_model < term.rms_relative_zero;
    }
    fit.workloads.push_back(term);
  }
  return fit;
}

}  // namespace

InterferenceFit fit_interference(const std::vector<ColocationObservation>& runs) {
  InterferenceFit fit;
  std::vector<const ColocationObservation*> usable;
  for (const auto& run : runs) {
    if (run.utilization_measured) {
      usable.push_back(&run);
    } else {
      ++fit.runs_excluded;
    }
  }
  fit.runs_fitted = usable.size();
  std::vector<ColocationObservation> fitted_runs;
  for (const auto* run : usable) fitted_runs.push_back(*run);
  fit.fitted_alpha = calibrate_interference(fitted_runs).alpha;

  // Leave one unordered pair out.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < usable.size(); ++i) {
    const std::string key =
        usable[i]->pair.empty() ? "#" + std::to_string(i) : unordered(usable[i]->pair);
    groups[key].push_back(i);
  }
  std::vector<double> squared_fitted, squared_zero, absolute_fitted, absolute_zero;
  if (groups.size() >= 2) {
    for (const auto& [key, members] : groups) {
      std::vector<ColocationObservation> rest;
      size_t next = 0;
      for (size_t i = 0; i < usable.size(); ++i) {
        if (next < members.size() && members[next] == i) {
          ++next;
          continue;
        }
        rest.push_back(*usable[i]);
      }
      const InterferenceModel held{calibrate_interference(rest).alpha};
      for (size_t i : members) {
        const auto& run = *usable[i];
        const double with_fit = predict(held, run);
        const double with_zero = predict(InterferenceModel{0.0}, run);
        squared_fitted.push_back(std::pow(relative_error(with_fit, run.measured_slowdown), 2));
        squared_zero.push_back(std::pow(relative_error(with_zero, run.measured_slowdown), 2));
        absolute_fitted.push_back(std::abs(with_fit - run.measured_slowdown));
        absolute_zero.push_back(std::abs(with_zero - run.measured_slowdown));
      }
    }
    const auto rms = [](const std::vector<double>& squares) {
      double sum = 0;
      for (double value : squares) sum += value;
      return std::sqrt(sum / static_cast<double>(squares.size()));
    };
    fit.held_out.groups = groups.size();
    fit.held_out.runs = squared_fitted.size();
    fit.held_out.rms_relative_fitted = rms(squared_fitted);
    fit.held_out.rms_relative_zero = rms(squared_zero);
    fit.held_out.median_absolute_fitted = median(absolute_fitted);
    fit.held_out.median_absolute_zero = median(absolute_zero);
  }

  // Per ordered pair: least squares through the origin on that pair's runs alone.
  std::map<std::string, std::pair<double, double>> sums;  // pair -> (xy, xx)
  std::map<std::string, size_t> counts;
  for (const auto* run : usable) {
    double x = 0;
    double y = 0;
    if (run->pair.empty() || !linearized(*run, x, y)) continue;
    sums[run->pair].first += x * y;
    sums[run->pair].second += x * x;
    ++counts[run->pair];
  }
  for (const auto& [pair, sum] : sums) {
    fit.pair_terms.push_back(
        PairTerm{pair, sum.second > 0 ? std::max(0.0, sum.first / sum.second) : 0.0, counts[pair]});
  }
  fit.asymmetric = fit_asymmetric(usable);

  const auto text = [](double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
    return std::string(buffer);
  };
  fit.model_used = fit.held_out.groups >= 2 &&
                   fit.held_out.rms_relative_fitted < fit.held_out.rms_relative_zero &&
                   fit.held_out.median_absolute_fitted <= fit.held_out.median_absolute_zero;
  if (fit.model_used) {
    fit.model = InterferenceModel{fit.fitted_alpha};
    fit.verdict = "alpha = " + text(fit.fitted_alpha) + ": beats alpha = 0 on " +
                  std::to_string(fit.held_out.groups) + " held-out pairs (RMS relative error " +
                  text(fit.held_out.rms_relative_fitted) + " vs " +
                  text(fit.held_out.rms_relative_zero) + ")";
  } else {
    fit.model = InterferenceModel{0.0};
    std::string why;
    if (fit.runs_fitted == 0) {
      why = "no run with utilizations measured alone";
      if (fit.runs_excluded > 0) {
        why += " (" + std::to_string(fit.runs_excluded) +
               " runs have utilizations derived from their slowdowns: not fitted)";
      }
    } else if (fit.held_out.groups < 2) {
      why = "fewer than two pairs to hold out";
    } else {
      why = "the fitted alpha = " + text(fit.fitted_alpha) + " does not beat alpha = 0 on " +
            std::to_string(fit.held_out.groups) + " held-out pairs (RMS relative error " +
            text(fit.held_out.rms_relative_fitted) + " vs " + text(fit.held_out.rms_relative_zero) +
            ", median absolute " + text(fit.held_out.median_absolute_fitted) + " vs " +
            text(fit.held_out.median_absolute_zero) + ")";
    }
    fit.verdict = "no model: bounded by measured slowdown only; " + why;
  }
  // Measured pairs keep their own term either way (a measurement of that pair, not a
  // prediction); pairs nobody measured get the asymmetric terms of the workloads those predict
  // better than alpha = 0 on held-out pairs, else the global alpha (fitted or not).
  for (const auto& term : fit.pair_terms) fit.model.pair_alpha[term.pair] = term.alpha;
  std::string used_names;
  std::string unused_names;
  for (const auto& term : fit.asymmetric.workloads) {
    fit.model.pressure[term.workload] = term.pressure;
    if (term.used) fit.model.sensitivity[term.workload] = term.sensitivity;
    if (term.held_out_runs == 0) continue;
    std::string& names = term.used ? used_names : unused_names;
    names += (names.empty() ? "" : ", ") + term.workload + " (" + text(term.rms_relative_model) +
             " vs " + text(term.rms_relative_zero) + ")";
  }
  if (fit.model.sensitivity.empty()) fit.model.pressure.clear();
  if (fit.asymmetric.groups >= 2) {
    fit.verdict += "; asymmetric terms (sensitivity x pressure, for pairs not measured): " +
                   (used_names.empty() ? std::string("none beats alpha = 0 on held-out pairs")
                                       : "used for " + used_names) +
                   (unused_names.empty() ? std::string() : "; not for " + unused_names) +
                   " (held-out RMS relative error with the terms vs alpha = 0)";
  }
  return fit;
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

double contended_time_sharing(const std::vector<LaneMember>& members, size_t index, double parallel,
                              bool estimate) {
  if (index >= members.size() || members[index].iteration_s <= 0) return parallel;
  const std::vector<LaneMember> stretched = stretch_gpu_phases(members, parallel);
  const double sharing =
      estimate ? time_sharing_estimate(stretched, index) : time_sharing_slowdown(stretched, index);
  return sharing * stretched[index].iteration_s / members[index].iteration_s;
}

double tolerated_parallel_slowdown(const std::vector<LaneMember>& members, size_t index,
                                   double bound) {
  if (index >= members.size() || members[index].iteration_s <= 0) return bound;
  // Worst case at factor p: (1 - u_i) + p (u_i + sum_{j != i} u_j t_j / t_i), linear in p.
  double others = 0;
  for (size_t j = 0; j < members.size(); ++j) {
    if (j != index) others += members[j].utilization * members[j].iteration_s;
  }
  const double per_unit = members[index].utilization + others / members[index].iteration_s;
  if (per_unit <= 0) return std::numeric_limits<double>::infinity();
  return (bound - 1.0 + members[index].utilization) / per_unit;
}

}  // namespace fleetscope::sharer
