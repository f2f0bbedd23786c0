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
    "others_utilization, measured_slowdown ('#' lines are comments; scripts/gpu-check writes\n"
    "it). --published fits the published runs compiled in (Gavel's V100 pairs,\n"
    "sharer/data/gavel_v100_colocation.csv), the default of `sim` and `share plan`. Prints alpha\n"
    "and the prediction error (RMS relative; median, 90th percentile and largest absolute, in\n"
    "slowdown units; the share of runs predicted faster than measured) of the uncalibrated\n"
    "(alpha = 0) model, of the published default and of the fitted model. Pass the file to\n"
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
      const auto model = calibrate_interference(runs, uncalibrated);
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& run : runs) {
        rows.push_back({{"own_utilization", run.own_utilization},
                        {"others_utilization", run.others_utilization},
                        {"measured_slowdown", run.measured_slowdown},
                        {"predicted_slowdown",
                         model.parallel_slowdown(run.own_utilization,
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
                              {"alpha", model.alpha},
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
                      "%zu co-location runs from %s: alpha = %.4f; RMS relative error %.3f "
                      "uncalibrated, %.3f calibrated\n",
                      runs.size(), runs_name.c_str(), model.alpha, before.rms_relative,
                      after.rms_relative);
        out << line;
        const std::string prior_name =
            "published default (alpha " + std::to_string(prior.model.alpha).substr(0, 6) + ")";
        for (const auto& [name, errors] :
             {std::pair<const char*, const PredictionErrors&>{"uncalibrated", before},
              std::pair<const char*, const PredictionErrors&>{prior_name.c_str(), with_prior},
              std::pair<const char*, const PredictionErrors&>{"calibrated", after}}) {
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
