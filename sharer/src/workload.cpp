#include "fleetscope/sharer/workload.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "fleetscope/sharer/fleet_packing.h"

#include "csv.h"

namespace fleetscope::sharer {

namespace {

struct Run {
  double jct_s;
  double peak_mb;
  int64_t iterations;
};

}  // namespace

const WorkloadProfile* ProfileTable::closest(const std::string& model, double iteration_s) const {
  const WorkloadProfile* best = nullptr;
  for (const auto& profile : profiles) {
    if (profile.model != model) continue;
    if (!best ||
        std::abs(profile.iteration_s - iteration_s) < std::abs(best->iteration_s - iteration_s)) {
      best = &profile;
    }
  }
  return best;
}

const WorkloadProfile* ProfileTable::find(const std::string& model, int batch_size) const {
  for (const auto& profile : profiles) {
    if (profile.model == model && profile.batch_size == batch_size) return &profile;
  }
  return nullptr;
}

ProfileTable load_salus_profiles(const std::string& path) {
  return parse_salus_profiles(csv::read_text(path,
                                             "Salus workload profiles (--profiles FILE; default: "
                                             "salus_workloads.csv next to the job trace)"),
                              path);
}

ProfileTable parse_salus_profiles(std::string_view text, const std::string& path) {
  const auto table = csv::parse(text, path, /*has_header=*/false, /*min_fields=*/4);
  if (table.rows.empty()) {
    csv::fail(path, 1,
              "at least one workload profile row (name_bs_duration,jct_s,peak_mb,"
              "iterations,...)");
  }
  std::map<std::pair<std::string, int>, std::vector<Run>> runs;
  for (const auto& row : table.rows) {
    // name_bs_duration: the duration suffix is not trusted (one row is mislabelled); the
    // iteration count tells the runs apart.
    const std::string& name = row.fields[0];
    const size_t first = name.find('_');
    const size_t second = first == std::string::npos ? first : name.find('_', first + 1);
    if (second == std::string::npos) {
      csv::fail(
          path, row.line,
          "a name like model_batchsize_duration in column 1, found '" + csv::excerpt(name) + "'");
    }
    const std::string batch_text = name.substr(first + 1, second - first - 1);
    int batch = 0;
    auto [end, error] =
        std::from_chars(batch_text.data(), batch_text.data() + batch_text.size(), batch);
    if (error != std::errc{} || end != batch_text.data() + batch_text.size() || batch < 1 ||
        batch > 1000000) {
      csv::fail(path, row.line,
                "a batch size in 1..1000000 in column 1, found '" + csv::excerpt(name) + "'");
    }
    runs[{name.substr(0, first), batch}].push_back(
        Run{csv::to_double_in(table, row, 1, "jct_s", 1e-9, 1e9),
            csv::to_double_in(table, row, 2, "peak_mb", 0, 1e9),
            csv::to_int_in(table, row, 3, "iterations", 1, kMaxIterations)});
  }
  ProfileTable result;
  for (const auto& [key, model_runs] : runs) {
    auto [shortest, longest] =
        std::minmax_element(model_runs.begin(), model_runs.end(),
                            [](const Run& a, const Run& b) { return a.iterations < b.iterations; });
    WorkloadProfile profile;
    profile.model = key.first;
    profile.batch_size = key.second;
    if (longest->iterations > shortest->iterations) {
      profile.iteration_s = (longest->jct_s - shortest->jct_s) /
                            static_cast<double>(longest->iterations - shortest->iterations);
    } else {
      profile.iteration_s =
          longest->jct_s / static_cast<double>(std::max<int64_t>(1, longest->iterations));
    }
    if (!(profile.iteration_s > 0) || !std::isfinite(profile.iteration_s)) {
      // Longer runs that finished sooner: use the average of the longest run instead.
      profile.iteration_s = longest->jct_s / static_cast<double>(longest->iterations);
    }
    profile.startup_s = std::max(
        0.0, shortest->jct_s - profile.iteration_s * static_cast<double>(shortest->iterations));
    profile.peak_bytes = static_cast<int64_t>(longest->peak_mb * static_cast<double>(kMiB));
    result.profiles.push_back(profile);
  }
  // Split each peak into P and T with a per-model least-squares line over the batch sizes.
  std::map<std::string, std::vector<WorkloadProfile*>> by_model;
  for (auto& profile : result.profiles) by_model[profile.model].push_back(&profile);
  for (auto& [model, members] : by_model) {
    double intercept = 0;
    if (members.size() >= 2) {
      double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (const auto* p : members) {
        const double x = p->batch_size;
        const double y = static_cast<double>(p->peak_bytes);
        n += 1;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
      }
      const double denominator = n * sxx - sx * sx;
      if (denominator != 0) {
        const double slope = (n * sxy - sx * sy) / denominator;
        intercept = (sy - slope * sx) / n;
      }
      if (!std::isfinite(intercept)) intercept = 0;
    }
    for (auto* p : members) {
      const double persistent = std::clamp(intercept, 0.0, static_cast<double>(p->peak_bytes));
      p->persistent_bytes = static_cast<int64_t>(persistent);
      p->ephemeral_bytes = p->peak_bytes - p->persistent_bytes;
    }
  }
  return result;
}

std::vector<SimJob> load_tiresias_jobs(const std::string& path, const ProfileTable& profiles,
                                       int max_gpus_per_job) {
  return parse_tiresias_jobs(csv::read_text(path, "a job trace (CSV)"), path, profiles,
                             max_gpus_per_job);
}

std::vector<SimJob> parse_tiresias_jobs(std::string_view text, const std::string& path,
                                        const ProfileTable& profiles, int max_gpus_per_job) {
  const auto table = csv::parse(text, path, /*has_header=*/true);
  const size_t id_col = table.column("job_id");
  const size_t gpus_col = table.column("num_gpu");
  const size_t submit_col = table.column("submit_time");
  const size_t iterations_col = table.column("iterations");
  const size_t model_col = table.column("model_name");
  const size_t duration_col = table.column("duration");
  const auto optional = [&](const char* name) {
    return table.has_column(name) ? table.column(name) : table.header.size();
  };
  const size_t batch_col = optional("batch_size");
  const size_t priority_col = optional("priority");
  const size_t utilization_col = optional("utilization");
  const size_t workload_col = optional("workload");
  if (table.rows.empty()) csv::fail(path, 2, "at least one job row after the header");
  // Two jobs with one id were both simulated and reported under the same id.
  csv::require_unique_ints(table, id_col, "job_id");

  std::vector<SimJob> jobs;
  for (const auto& row : table.rows) {
    SimJob job;
    job.id = csv::to_int(table, row, id_col, "job_id");
    job.name = csv::excerpt(row.fields[id_col]);
    job.num_gpu = static_cast<int>(csv::to_int_in(table, row, gpus_col, "num_gpu", 1, kMaxGpus));
    if (job.num_gpu > max_gpus_per_job) {
      csv::fail_value(
          table, row, gpus_col, "num_gpu",
          "at most " + std::to_string(max_gpus_per_job) + " GPUs (the simulated cluster's size)");
    }
    job.submit_s = csv::to_double_in(table, row, submit_col, "submit_time", 0, kMaxSubmitSeconds);
    job.iterations = csv::to_int_in(table, row, iterations_col, "iterations", 1, kMaxIterations);
    job.model = row.fields[model_col];
    const WorkloadProfile* profile = nullptr;
    if (batch_col < table.header.size() && !row.fields[batch_col].empty()) {
      const int batch =
          static_cast<int>(csv::to_int_in(table, row, batch_col, "batch_size", 1, 1000000));
      profile = profiles.find(job.model, batch);
    } else {
      const double duration =
          csv::to_double_in(table, row, duration_col, "duration", 0, kMaxSubmitSeconds);
      profile = profiles.closest(job.model, duration / static_cast<double>(job.iterations));
    }
    if (!profile) {
      csv::fail_value(table, row, model_col, "model_name",
                      "a model (and batch size) present in the workload profiles");
    }
    job.batch_size = profile->batch_size;
    job.iteration_s = profile->iteration_s;
    if (!(job.iteration_s > 0) || job.iteration_s > kMaxIterationSeconds) {
      csv::fail_value(table, row, model_col, "model_name",
                      "a profile with an iteration time in (0, 1e7] s");
    }
    job.memory = MemoryDemand{profile->persistent_bytes, profile->ephemeral_bytes, -1.0};
    if (priority_col < table.header.size() && !row.fields[priority_col].empty()) {
      job.priority =
          static_cast<int>(csv::to_int_in(table, row, priority_col, "priority", -1000000, 1000000));
    }
    if (utilization_col < table.header.size() && !row.fields[utilization_col].empty()) {
      job.utilization = csv::to_double_in(table, row, utilization_col, "utilization", 0, 1);
      if (job.utilization <= 0) {
        csv::fail_value(table, row, utilization_col, "utilization", "in (0, 1]");
      }
    }
    if (workload_col < table.header.size()) job.workload = row.fields[workload_col];
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<SimJob> jobs_from_pods(const std::vector<Pod>& pods, int64_t gpu_capacity_bytes,
                                   int quanta) {
  std::vector<SimJob> jobs;
  jobs.reserve(pods.size());
  const int64_t origin = 0;
  for (size_t i = 0; i < pods.size(); ++i) {
    const Pod& pod = pods[i];
    SimJob job;
    job.id = static_cast<int64_t>(i) + origin;
    job.name = pod.name;
    job.model = "alibaba-pod";
    job.num_gpu = pod.num_gpu;
    job.submit_s = pod.creation_s;
    const double duration = std::max(1.0, pod.deletion_s - pod.creation_s);
    job.iterations =
        std::max<int64_t>(1, std::min<int64_t>(quanta, static_cast<int64_t>(std::floor(duration))));
    job.iteration_s = duration / static_cast<double>(job.iterations);
    const double share = std::min(1000, pod.gpu_milli) / 1000.0;
    job.utilization = share;
    // The pod's share of the GPU's memory, all of it persistent (no per-iteration peak known).
    job.memory = MemoryDemand{
        static_cast<int64_t>(share * static_cast<double>(gpu_capacity_bytes) * 0.9), 0, 0};
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::vector<SimJob> training_jobs_from_pods(const std::vector<Pod>& pods,
                                            const ProfileTable& profiles, size_t count,
                                            int64_t gpu_capacity_bytes, double max_duration_s) {
  if (pods.empty() || profiles.profiles.empty()) {
    throw std::invalid_argument("training_jobs_from_pods needs pods and profiles");
  }
  const auto base = jobs_from_pods(pods, gpu_capacity_bytes);
  std::vector<SimJob> jobs;
  jobs.reserve(count);
  for (size_t copy = 0; jobs.size() < count; ++copy) {
    for (size_t i = 0; i < base.size() && jobs.size() < count; ++i) {
      SimJob job = base[i];
      const WorkloadProfile& profile = profiles.profiles[jobs.size() % profiles.profiles.size()];
      const double lifetime = std::max(1.0, pods[i].deletion_s - pods[i].creation_s);
      job.id = static_cast<int64_t>(jobs.size());
      job.submit_s = pods[i].creation_s / 1000.0 + static_cast<double>(copy) * 7.0;
      job.model = profile.model;
      job.batch_size = profile.batch_size;
      job.iteration_s = profile.iteration_s;
      job.iterations = std::max<int64_t>(
          1, std::llround(std::min(lifetime, max_duration_s) / profile.iteration_s));
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

double SimJob::iteration_time_s(int64_t index) const {
  if (steady()) return iteration_s;
  const int64_t position = index % 100;
  if (position == 49 || position == 99) return iteration_p99_s;
  return std::max(0.0, (100.0 * iteration_s - 2.0 * iteration_p99_s) / 98.0);
}

}  // namespace fleetscope::sharer
