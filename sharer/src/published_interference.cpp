// The interference model's default from published co-location measurements, and the other two
// places its parameters can come from (a local calibration file, a command-line value). Every
// path that fits goes through load/parse_colocation_runs and calibrate_interference.

#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/sharer/interference.h"

namespace fleetscope::sharer {

namespace data {
// sharer/data/gavel_v100_colocation.csv, compiled in by CMake (published_colocation.cpp.in).
extern const char kPublishedColocationCsv[];
}  // namespace data

namespace {
constexpr const char* kPublishedSource = "sharer/data/gavel_v100_colocation.csv (compiled in)";

std::string alpha_text(double alpha) {  // for --interference-alpha
  std::ostringstream text;
  text.precision(4);
  text << alpha;
  return text.str();
}
}  // namespace

const std::vector<ColocationObservation>& published_colocation_runs() {
  static const std::vector<ColocationObservation> runs =
      parse_colocation_runs(data::kPublishedColocationCsv, kPublishedSource);
  return runs;
}

const InterferenceCalibration& published_interference() {
  static const InterferenceCalibration calibration = [] {
    const auto& runs = published_colocation_runs();
    const auto fit = fit_interference(runs);
    InterferenceCalibration result;
    result.model = fit.model;
    result.model_used = fit.model_used;
    result.source = "published";
    result.runs = runs.size();
    result.description =
        fit.verdict + "; published default: " + std::to_string(runs.size()) +
        " V100 co-location runs of Gavel (Narayanan et al., OSDI 2020; "
        "sharer/data/gavel_v100_colocation.csv); calibrate locally with scripts/gpu-check and "
        "--calibration";
    return result;
  }();
  return calibration;
}

InterferenceCalibration interference_from_file(const std::string& path) {
  const auto runs = load_colocation_runs(path);
  const auto fit = fit_interference(runs);
  InterferenceCalibration result;
  result.model = fit.model;
  result.model_used = fit.model_used;
  result.source = "calibration";
  result.runs = runs.size();
  result.description = fit.verdict + "; calibrated: " + std::to_string(fit.runs_fitted) +
                       " co-location runs fitted from " + path;
  if (!fit.pair_terms.empty()) {
    result.description += "; " + std::to_string(fit.pair_terms.size()) +
                          " measured pair terms (the planner uses them for jobs labelled "
                          "workload=NAME)";
  }
  return result;
}

InterferenceCalibration interference_from_flag(double alpha) {
  InterferenceCalibration result;
  result.model = InterferenceModel{alpha};
  result.source = "flag";
  result.description = "alpha = " + alpha_text(alpha) + ", given with --interference-alpha";
  return result;
}

nlohmann::json interference_to_json(const InterferenceCalibration& calibration) {
  return {{"alpha", calibration.model.alpha},
          {"model_used", calibration.model_used},
          {"source", calibration.source},
          {"runs", calibration.runs},
          {"description", calibration.description}};
}

}  // namespace fleetscope::sharer
