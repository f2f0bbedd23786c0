#include "fleetscope/sharer/job_profile.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace fleetscope::sharer {

bool JobProfile::latency_sensitive() const {
  auto cls = labels.find("class");
  if (cls != labels.end() && cls->second == "latency") return true;
  return labels.count("latency") > 0 || labels.count("priority") > 0;
}

namespace {

template <typename T>
T required_field(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) {
    throw std::runtime_error(where + ": missing field '" + key + "'");
  }
  try {
    return object.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + ": field '" + key + "' has the wrong type");
  }
}

}  // namespace

std::vector<JobProfile> parse_job_profiles(const std::string& json_text,
                                           const std::string& source) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& error) {
    throw std::runtime_error(source + ": not valid JSON (" + error.what() + ")");
  }
  if (!document.is_array()) {
    throw std::runtime_error(source + ": expected a JSON array of job profiles");
  }
  std::vector<JobProfile> jobs;
  for (size_t i = 0; i < document.size(); ++i) {
    const auto& item = document[i];
    const std::string where = source + ": element " + std::to_string(i);
    if (!item.is_object()) throw std::runtime_error(where + ": expected an object");
    JobProfile job;
    job.job_id = required_field<std::string>(item, "job_id", where);
    job.workflow = item.value("workflow", std::string{});
    job.gpu = required_field<std::string>(item, "gpu", where);
    job.persistent_bytes = required_field<int64_t>(item, "persistent_bytes", where);
    job.ephemeral_peak_bytes = required_field<int64_t>(item, "ephemeral_peak_bytes", where);
    job.gpu_capacity_bytes = required_field<int64_t>(item, "gpu_capacity_bytes", where);
    job.utilization = required_field<double>(item, "utilization", where);
    job.iteration_ns = item.value("iteration_ns", int64_t{0});
    job.peak_stddev_bytes = item.value("peak_stddev_bytes", -1.0);
    if (item.contains("labels")) {
      for (const auto& [key, value] : item.at("labels").items()) {
        job.labels[key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
    if (job.persistent_bytes < 0 || job.ephemeral_peak_bytes < 0 || job.gpu_capacity_bytes <= 0 ||
        job.utilization < 0 || job.utilization > 1) {
      throw std::runtime_error(where + ": expected non-negative bytes, positive capacity and " +
                               "utilization in [0, 1]");
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<JobProfile> load_job_profiles(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_job_profiles(buffer.str(), path);
}

}  // namespace fleetscope::sharer
