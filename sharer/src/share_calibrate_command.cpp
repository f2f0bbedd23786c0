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
    "usage: fleetscope share calibrate --runs RUNS.csv [--format table|json]\n"
    "\n"
    "Fits alpha of the interference model slowdown = max(1, U) * (1 + alpha * min(1, others))\n"
    "by least squares to co-location measurements: a CSV with the columns own_utilization,\n"
    "others_utilization, measured_slowdown (scripts/gpu-check writes it). Prints alpha and the\n"
    "RMS relative prediction error of the uncalibrated (alpha = 0) and calibrated model. Pass\n"
    "the same file to `sim --calibration` or `share plan --calibration`.\n";

}  // namespace

int run_share_calibrate_command(const std::vector<std::string>& args, std::ostream& out,
                                std::ostream& err) {
  try {
    const Arguments arguments(args, {"--runs", "--format"}, {"--help"});
    if (arguments.has("--help")) {
      out << kCalibrateUsage;
      return 0;
    }
    if (!arguments.positional().empty()) {
      throw UsageError("unexpected argument " + arguments.positional().front());
    }
    const auto path = arguments.get("--runs");
    if (!path) throw UsageError("--runs RUNS.csv is required");
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    try {
      const auto runs = load_colocation_runs(*path);
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
      const double before = prediction_rms_error(uncalibrated, runs);
      const double after = prediction_rms_error(model, runs);
      if (format == "json") {
        out << nlohmann::json{{"runs_file", *path},
                              {"runs", runs.size()},
                              {"alpha", model.alpha},
                              {"rms_error_uncalibrated", before},
                              {"rms_error_calibrated", after},
                              {"observations", rows}}
                   .dump(2)
            << "\n";
      } else {
        char line[200];
        std::snprintf(line, sizeof line,
                      "%zu co-location runs from %s: alpha = %.4f; RMS relative error %.3f "
                      "uncalibrated, %.3f calibrated\n",
                      runs.size(), path->c_str(), model.alpha, before, after);
        out << line;
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
