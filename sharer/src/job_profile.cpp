#include "fleetscope/sharer/job_profile.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "csv.h"

namespace fleetscope::sharer {

bool JobProfile::latency_sensitive() const {
  auto cls = labels.find("class");
  if (cls != labels.end() && cls->second == "latency") return true;
  return labels.count("latency") > 0 || labels.count("priority") > 0;
}

namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 50;  // 1 PiB: beyond any GPU
constexpr int64_t kMaxIterationNs = int64_t{1} << 53;

std::string type_name(const nlohmann::json& value) {
  return value.type_name();
}

[[noreturn]] void field_error(const std::string& where, const char* key,
                              const std::string& expected, const nlohmann::json& value) {
  std::string found = value.dump();
  if (found.size() > 40)
    found = found.substr(0, 40) + "... (" + std::to_string(found.size()) + " characters)";
  throw std::runtime_error(where + ": field '" + key + "': expected " + expected + ", found " +
                           type_name(value) + " " + found);
}

// An integer in [min, max]; JSON floats are accepted only when integral and in range (a float
// such as 1e300 is never cast).
int64_t integer_field(const nlohmann::json& object, const char* key, const std::string& where,
                      int64_t min, int64_t max, std::optional<int64_t> fallback = std::nullopt) {
  if (!object.contains(key)) {
    if (fallback) return *fallback;
    throw std::runtime_error(where + ": missing field '" + key + "'");
  }
  const auto& value = object.at(key);
  const std::string expected = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
  if (value.is_number_unsigned()) {
    const auto v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(max)) field_error(where, key, expected, value);
    if (static_cast<int64_t>(v) < min) field_error(where, key, expected, value);
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    const auto v = value.get<int64_t>();
    if (v < min || v > max) field_error(where, key, expected, value);
    return v;
  }
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(min) ||
        v > static_cast<double>(max)) {
      field_error(where, key, expected, value);
    }
    return static_cast<int64_t>(v);
  }
  field_error(where, key, expected, value);
}

double number_field(const nlohmann::json& object, const char* key, const std::string& where,
                    double min, double max, std::optional<double> fallback = std::nullopt) {
  if (!object.contains(key)) {
    if (fallback) return *fallback;
    throw std::runtime_error(where + ": missing field '" + key + "'");
  }
  const auto& value = object.at(key);
  std::ostringstream expected;
  expected << "a number in [" << min << ", " << max << "]";
  if (!value.is_number()) field_error(where, key, expected.str(), value);
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < min || v > max) field_error(where, key, expected.str(), value);
  return v;
}

std::string string_field(const nlohmann::json& object, const char* key, const std::string& where,
                         std::optional<std::string> fallback = std::nullopt) {
  if (!object.contains(key)) {
    if (fallback) return *fallback;
    throw std::runtime_error(where + ": missing field '" + key + "'");
  }
  const auto& value = object.at(key);
  if (!value.is_string()) field_error(where, key, "a string", value);
  return value.get<std::string>();
}

}  // namespace

std::vector<JobProfile> parse_job_profiles(const std::string& json_text,
                                           const std::string& source) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& error) {
    // parse_error carries the byte offset ("at line L, column C"); out_of_range.406 (a number
    // such as 1e600 that overflows a double, found by fuzzing) is raised by the parser too.
    // Without the library's "[json.exception.parse_error.101] " tag: the user reads the
    // position and what was expected.
    std::string what = error.what();
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
      what.erase(0, what.find("] ") + 2);
    throw std::runtime_error(source + ": not valid JSON (" + what +
                             "); expected a JSON array of job profiles");
  }
  if (!document.is_array()) {
    throw std::runtime_error(source + ": expected a JSON array of job profiles, found " +
                             std::string(document.type_name()));
  }
  std::vector<JobProfile> jobs;
  jobs.reserve(document.size());
  for (size_t i = 0; i < document.size(); ++i) {
    const auto& item = document[i];
    const std::string where = source + ": element " + std::to_string(i);
    if (!item.is_object()) throw std::runtime_error(where + ": expected an object");
    JobProfile job;
    job.job_id = string_field(item, "job_id", where);
    job.workflow = string_field(item, "workflow", where, std::string{});
    job.gpu = string_field(item, "gpu", where);
    job.persistent_bytes = integer_field(item, "persistent_bytes", where, 0, kMaxBytes);
    job.ephemeral_peak_bytes = integer_field(item, "ephemeral_peak_bytes", where, 0, kMaxBytes);
    job.gpu_capacity_bytes = integer_field(item, "gpu_capacity_bytes", where, 1, kMaxBytes);
    job.utilization = number_field(item, "utilization", where, 0, 1);
    job.iteration_ns = integer_field(item, "iteration_ns", where, 0, kMaxIterationNs, 0);
    job.iteration_p99_ns = integer_field(item, "iteration_p99_ns", where, 0, kMaxIterationNs, 0);
    if (item.contains("peak_stddev_bytes") && item.at("peak_stddev_bytes").is_number() &&
        item.at("peak_stddev_bytes").get<double>() < 0) {
      job.peak_stddev_bytes = -1.0;  // "not measured", as the analyzer writes it
    } else {
      job.peak_stddev_bytes =
          number_field(item, "peak_stddev_bytes", where, 0, static_cast<double>(kMaxBytes), -1.0);
    }
    job.memory_evidence = string_field(item, "memory_evidence", where, std::string{});
    if (item.contains("labels")) {
      const auto& labels = item.at("labels");
      if (!labels.is_object()) field_error(where, "labels", "an object", labels);
      for (const auto& [key, value] : labels.items()) {
        job.labels[key] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<JobProfile> load_job_profiles(const std::string& path) {
  return parse_job_profiles(
      csv::read_text(path, "a JSON array of job profiles (`fleetscope candidates --format json`)"),
      path);
}

}  // namespace fleetscope::sharer
