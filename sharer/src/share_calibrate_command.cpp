// `fleetscope share calibrate`: fits the interference model to measured co-location runs (the
// CSV the co-location section of scripts/gpu-check writes) and reports how well it predicts them.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "arguments.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/interference.h"

namespace fleetscope::sharer {

namespace {

constexpr const char* kCalibrateUsage =
    "usage: fleetscope share calibrate (--runs RUNS.csv | --published) [--format table|json]\n"
    "\n"
    "Fits alpha of the interference model slowdown = max(1, U) * (1 + alpha * min(1, others))\n"
    "by least squares to co-location measurements: a CSV with the columns own_utilization,\n"
    "others_utilization, measured_slowdown and optionally pair (measured+neighbour) and\n"
    "utilization_source (measured_alone | derived_from_slowdown; '#' lines are comments;\n"
    "scripts/gpu-check writes it). Runs whose utilizations were derived from their slowdowns\n"
    "are not fitted (circular). The fit is cross-validated by leaving each unordered pair out,\n"
    "and used only if it beats alpha = 0 on the held-out pairs; otherwise: no model (alpha = 0,\n"
    "bounded by measured slowdown only). Per ordered pair terms show the asymmetry (A next to\n"
    "B vs B next to A). For pairs nobody measured, a workload's sensitivity (how much it\n"
    "suffers) times its neighbour's pressure (how much that one hurts) gives the term, fitted\n"
    "to the named runs and cross-validated the same way: used only for the workloads whose\n"
    "held-out error beats alpha = 0. --published reads the compiled-in Gavel V100 pairs\n"
    "(sharer/data/gavel_v100_colocation.csv). Also prints the in-sample error (RMS relative;\n"
    "median, 90th percentile and largest absolute; share predicted faster than measured) of\n"
    "alpha = 0, the published default and the fitted alpha. Pass the file to\n"
    "`sim --calibration` or `share plan --calibration`.\n";

}  // namespace

int run_share_calibrate_command(const std::vector<std::string>& args, std::ostream& out,
                                std::ostream& err) {
  try {
    const Arguments arguments(args, {"--runs", "--format"}, {"--help", "--published"});
    if (arguments.has("--help")) {
      out << kCalibrateUsage;
      return 0;
    }
    if (!arguments.positional().empty()) {
      throw UsageError("unexpected argument " + arguments.positional().front());
    }
    const auto path = arguments.get("--runs");
    const bool published = arguments.has("--published");
    if (!path && !published) throw UsageError("--runs RUNS.csv or --published is required");
    if (path && published) throw UsageError("give --runs RUNS.csv or --published, not both");
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    try {
      const std::string runs_name =
          published ? std::string("the published runs (sharer/data/gavel_v100_colocation.csv)")
                    : *path;
      const auto runs = published ? published_colocation_runs() : load_colocation_runs(*path);
      const InterferenceModel uncalibrated{0.0};
      const auto fit = fit_interference(runs);
      const InterferenceModel model{fit.fitted_alpha};
      nlohmann::json pair_terms = nlohmann::json::array();
      for (const auto& term : fit.pair_terms) {
        pair_terms.push_back({{"pair", term.pair}, {"alpha", term.alpha}, {"runs", term.runs}});
      }
      nlohmann::json workload_terms = nlohmann::json::array();
      for (const auto& term : fit.asymmetric.workloads) {
        workload_terms.push_back({{"workload", term.workload},
                                  {"sensitivity", term.sensitivity},
                                  {"pressure", term.pressure},
                                  {"held_out_runs", term.held_out_runs},
                                  {"rms_relative_model", term.rms_relative_model},
                                  {"rms_relative_alpha_zero", term.rms_relative_zero},
                                  {"used", term.used}});
      }
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& run : runs) {
        rows.push_back({{"own_utilization", run.own_utilization},
                        {"others_utilization", run.others_utilization},
                        {"measured_slowdown", run.measured_slowdown},
                        {"predicted_slowdown",
                         model.iteration_slowdown(run.own_utilization,
                                                  run.own_utilization + run.others_utilization)}});
      }
      const auto before = prediction_errors(uncalibrated, runs);
      const auto after = prediction_errors(model, runs);
      // How well the published default would have predicted these (local) runs.
      const auto& prior = published_interference();
      const auto with_prior = prediction_errors(prior.model, runs);
      const auto errors_json = [](const PredictionErrors& errors) {
        return nlohmann::json{{"rms_relative", errors.rms_relative},
                              {"median_absolute", errors.median_absolute},
                              {"p90_absolute", errors.p90_absolute},
                              {"max_absolute", errors.max_absolute},
                              {"optimistic_share", errors.optimistic_share}};
      };
      if (format == "json") {
        out << nlohmann::json{{"runs_file",
                               published ? nlohmann::json(nullptr) : nlohmann::json(*path)},
                              {"source", published ? "published" : "calibration"},
                              {"runs", runs.size()},
                              {"runs_fitted", fit.runs_fitted},
                              {"runs_excluded", fit.runs_excluded},
                              {"alpha", fit.model.alpha},
                              {"fitted_alpha", fit.fitted_alpha},
                              {"model_used", fit.model_used},
                              {"verdict", fit.verdict},
                              {"held_out",
                               {{"pairs", fit.held_out.groups},
                                {"runs", fit.held_out.runs},
                                {"rms_relative_fitted", fit.held_out.rms_relative_fitted},
                                {"rms_relative_alpha_zero", fit.held_out.rms_relative_zero},
                                {"median_absolute_fitted", fit.held_out.median_absolute_fitted},
                                {"median_absolute_alpha_zero", fit.held_out.median_absolute_zero}}},
                              {"pair_terms", pair_terms},
                              {"asymmetric",
                               {{"pairs_held_out", fit.asymmetric.groups},
                                {"runs_held_out", fit.asymmetric.runs},
                                {"rms_relative_model", fit.asymmetric.rms_relative_model},
                                {"rms_relative_alpha_zero", fit.asymmetric.rms_relative_zero},
                                {"median_absolute_model", fit.asymmetric.median_absolute_model},
                                {"median_absolute_alpha_zero", fit.asymmetric.median_absolute_zero},
                                {"workloads", workload_terms}}},
                              {"rms_error_uncalibrated", before.rms_relative},
                              {"rms_error_calibrated", after.rms_relative},
                              {"errors_uncalibrated", errors_json(before)},
                              {"errors_calibrated", errors_json(after)},
                              {"published_default_alpha", prior.model.alpha},
                              {"errors_published_default", errors_json(with_prior)},
                              {"observations", rows}}
                   .dump(2)
            << "\n";
      } else {
        char line[400];
        std::snprintf(line, sizeof line,
                      "%zu co-location runs from %s (%zu fitted, %zu with utilizations derived "
                      "from their slowdowns left out)\n",
                      runs.size(), runs_name.c_str(), fit.runs_fitted, fit.runs_excluded);
        out << line << "model: " << fit.verdict << "\n";
        if (fit.held_out.groups >= 2) {
          std::snprintf(line, sizeof line,
                        "held out (leave one pair out, %zu pairs, %zu runs): RMS relative error "
                        "%.3f fitted vs %.3f with alpha = 0; median absolute %.3f vs %.3f\n",
                        fit.held_out.groups, fit.held_out.runs, fit.held_out.rms_relative_fitted,
                        fit.held_out.rms_relative_zero, fit.held_out.median_absolute_fitted,
                        fit.held_out.median_absolute_zero);
          out << line;
        }
        std::snprintf(line, sizeof line,
                      "in sample: fitted alpha = %.4f; RMS relative error %.3f with alpha = 0, "
                      "%.3f fitted\n",
                      fit.fitted_alpha, before.rms_relative, after.rms_relative);
        out << line;
        const std::string prior_name =
            "published default (alpha " + std::to_string(prior.model.alpha).substr(0, 6) + ")";
        if (!fit.pair_terms.empty()) {
          out << "PAIR (measured+neighbour)  ALPHA  RUNS\n";
          for (const auto& term : fit.pair_terms) {
            std::snprintf(line, sizeof line, "%-40s %6.3f %5zu\n", term.pair.c_str(), term.alpha,
                          term.runs);
            out << line;
          }
        }
        if (fit.asymmetric.groups >= 2) {
          std::snprintf(line, sizeof line,
                        "asymmetric terms held out (leave one pair out, %zu pairs, %zu runs): RMS "
                        "relative error %.3f vs %.3f with alpha = 0; median absolute %.3f vs "
                        "%.3f\n",
                        fit.asymmetric.groups, fit.asymmetric.runs,
                        fit.asymmetric.rms_relative_model, fit.asymmetric.rms_relative_zero,
                        fit.asymmetric.median_absolute_model, fit.asymmetric.median_absolute_zero);
          out << line;
          out << "WORKLOAD                       SENSITIVITY  PRESSURE  HELD-OUT RUNS  RMS TERMS  "
                 "RMS ALPHA=0  USED\n";
          for (const auto& term : fit.asymmetric.workloads) {
            std::snprintf(line, sizeof line, "%-30s %11.3f %9.3f %14zu %10.3f %12.3f  %s\n",
                          term.workload.c_str(), term.sensitivity, term.pressure,
                          term.held_out_runs, term.rms_relative_model, term.rms_relative_zero,
                          term.used ? "yes" : "no");
            out << line;
          }
        }
        for (const auto& [name, errors] :
             {std::pair<const char*, const PredictionErrors&>{"uncalibrated", before},
              std::pair<const char*, const PredictionErrors&>{prior_name.c_str(), with_prior},
              std::pair<const char*, const PredictionErrors&>{"fitted alpha", after}}) {
          std::snprintf(line, sizeof line,
                        "%s: |predicted - measured| slowdown median %.3f, p90 %.3f, max %.3f; "
                        "predicted faster than measured in %.0f %% of runs\n",
                        name, errors.median_absolute, errors.p90_absolute, errors.max_absolute,
                        100.0 * errors.optimistic_share);
          out << line;
        }
        out << "OWN_U  OTHERS_U  MEASURED  PREDICTED\n";
        for (const auto& row : rows) {
          std::snprintf(line, sizeof line, "%5.2f  %8.2f  %8.3f  %9.3f\n",
                        row.at("own_utilization").get<double>(),
                        row.at("others_utilization").get<double>(),
                        row.at("measured_slowdown").get<double>(),
                        row.at("predicted_slowdown").get<double>());
          out << line;
        }
      }
      return 0;
    } catch (const std::exception& error) {
      err << "share calibrate: " << error.what() << "\n";
      return 1;
    }
  } catch (const UsageError& error) {
    err << "share calibrate: " << error.what() << "\n" << kCalibrateUsage;
    return 2;
  }
}

}  // namespace fleetscope::sharer
