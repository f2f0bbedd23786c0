// `fleetscope advise`: which GPU type (and how many) for a job, from one capture of it
// (gpu_advice.h has the model).

#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arguments.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/sharer/gpu_advice.h"

namespace fleetscope::sharer {

namespace {

constexpr const char* kAdviseUsage =
    "usage: fleetscope advise DB [--capture N] [--device D] [--from TYPE] [--to TYPE,...]\n"
    "                         [--steps N] [--deadline-h H] [--budget X] [--price TYPE=X,...]\n"
    "                         [--gradient-mib G] [--max-gpus N] [--format table|json]\n"
    "       fleetscope advise --list-gpus [--format table|json]\n"
    "       fleetscope advise --validate STEP_RATES.csv [--format table|json]\n"
    "\n"
    "Predicts the step time of the job in capture N (default: the newest) of DB on other GPU\n"
    "types, from its per-kernel times on the GPU it ran on (Ceer-style; docs/sharer.md, "
    "\"GPU-type\n"
    "advice\"): matrix and convolution kernels scale by the FLOP/s ratio (tensor-core kernels by\n"
    "the FP16 tensor figures), other kernels, copies on the device and memsets by the memory\n"
    "bandwidth ratio, host copies by the PCIe ratio; NCCL kernels and the step's idle time are\n"
    "kept as measured. The GPU is the capture's (TARGET_INFO_GPU name), or --from. With --steps\n"
    "(the job's total steps) it predicts the training time per type, and with --deadline-h the\n"
    "fewest GPUs of each type that meet it (data-parallel in one node, at most --max-gpus (8),\n"
    "with a ring all-reduce of --gradient-mib MiB per step over the type's GPU link; without\n"
    "--gradient-mib one GPU per type). --price gives the price of one GPU-hour per type (any\n"
    "currency); with prices it recommends the cheapest type that meets the deadline (and\n"
    "--budget). --list-gpus prints the spec table and its sources; --validate compares the\n"
    "model's range with published step rates of one job on two GPU types (columns job, from,\n"
    "to, from_steps_per_s, to_steps_per_s; sharer/data/gavel_solo_throughputs.csv).\n";

std::mutex loader_mutex;
WorkLoader& loader_slot() {
  static WorkLoader loader;
  return loader;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

double positive_number(const Arguments& arguments, const std::string& flag) {
  const double value = arguments.number(flag, 0);
  if (!std::isfinite(value) || value <= 0) {
    throw UsageError(flag + " expects a finite number above 0, got '" + arguments.get_or(flag, "") +
                     "'");
  }
  return value;
}

int list_gpus(const std::string& format, std::ostream& out) {
  if (format == "json") {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& spec : gpu_specs()) {
      rows.push_back({{"type", spec.id},
                      {"fp32_tflops", spec.fp32_tflops},
                      {"fp16_matrix_tflops", spec.fp16_matrix_tflops},
                      {"memory_gbs", spec.memory_gbs},
                      {"memory_gib", spec.memory_gib},
                      {"host_link_gbs", spec.host_link_gbs},
                      {"peer_link_gbs", spec.peer_link_gbs},
                      {"source", spec.source}});
    }
    out << rows.dump(2) << "\n";
    return 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %8s %8s %8s %6s %6s %6s  %s\n", "TYPE", "FP32", "FP16MX",
                "MEM_GBS", "GIB", "HOST", "PEER", "SOURCE");
  out << line;
  for (const auto& spec : gpu_specs()) {
    std::snprintf(line, sizeof line, "%-16s %8.1f %8.1f %8.0f %6.0f %6.0f %6.0f  %s\n",
                  spec.id.c_str(), spec.fp32_tflops, spec.fp16_matrix_tflops, spec.memory_gbs,
                  spec.memory_gib, spec.host_link_gbs, spec.peer_link_gbs, spec.source.c_str());
    out << line;
  }
  return 0;
}

int validate(const std::string& path, const std::string& format, std::ostream& out) {
  if (const auto problem = common::input_problem(path, "a CSV of published step rates")) {
    throw std::runtime_error(common::cannot_read(path, *problem));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(common::cannot_read(path, "it cannot be opened"));
  std::stringstream text;
  text << file.rdbuf();
  const auto checks = check_published_ratios(parse_published_step_ratios(text.str(), path));
  double worst = 0, sum = 0;
  size_t inside = 0;
  for (const auto& check : checks) {
    worst = std::max(worst, check.error);
    sum += check.error;
    inside += check.error == 0 ? 1 : 0;
  }
  if (format == "json") {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& check : checks) {
      rows.push_back({{"job", check.run.job},
                      {"from", check.run.from},
                      {"to", check.run.to},
                      {"measured_speedup", check.measured_speedup},
                      {"memory_bound_speedup", check.memory_bound_speedup},
                      {"compute_bound_speedup", check.compute_bound_speedup},
                      {"error", check.error},
                      {"source", check.run.source}});
    }
    out << nlohmann::json{{"runs", rows},
                          {"inside_range", inside},
                          {"mean_error", checks.empty() ? 0 : sum / checks.size()},
                          {"max_error", worst}}
               .dump(2)
        << "\n";
    return 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-30s %-10s %-10s %9s %12s %12s %7s\n", "JOB", "FROM", "TO",
                "MEASURED", "MEMORY_BOUND", "FP32_BOUND", "ERROR");
  out << line;
  for (const auto& check : checks) {
    std::snprintf(line, sizeof line, "%-30s %-10s %-10s %9.3f %12.3f %12.3f %6.1f%%\n",
                  check.run.job.c_str(), check.run.from.c_str(), check.run.to.c_str(),
                  check.measured_speedup, check.memory_bound_speedup, check.compute_bound_speedup,
                  100 * check.error);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "%zu of %zu measured speedups inside the model's range; mean error %.1f%%, "
                "largest %.1f%% (error: how far outside the range, over the measured speedup)\n",
                inside, checks.size(), checks.empty() ? 0.0 : 100 * sum / checks.size(),
                100 * worst);
  out << line;
  return 0;
}

}  // namespace

void set_work_loader(WorkLoader loader) {
  std::lock_guard lock(loader_mutex);
  loader_slot() = std::move(loader);
}

int run_advise_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    const Arguments arguments(
        args,
        {"--capture", "--device", "--from", "--to", "--steps", "--deadline-h", "--budget",
         "--price", "--gradient-mib", "--max-gpus", "--format", "--validate"},
        {"--help", "--list-gpus"});
    if (arguments.has("--help")) {
      out << kAdviseUsage;
      return 0;
    }
    const std::string format = arguments.get_or("--format", "table");
    if (format != "table" && format != "json") {
      throw UsageError("--format expects table|json, got '" + format + "'");
    }
    if (arguments.has("--list-gpus")) return list_gpus(format, out);
    try {
      if (const auto path = arguments.get("--validate")) return validate(*path, format, out);
    } catch (const std::exception& error) {
      err << "advise: " << error.what() << "\n";
      return 1;
    }
    if (arguments.positional().size() != 1) {
      throw UsageError("give one trace database (or --list-gpus, --validate FILE)");
    }
    const std::string db = arguments.positional().front();
    std::optional<int64_t> capture;
    if (arguments.has("--capture")) {
      const double value = arguments.number("--capture", 0);
      if (value < 1 || value != std::floor(value))
        throw UsageError("--capture expects a capture id");
      capture = static_cast<int64_t>(value);
    }
    AdviceOptions options;
    if (const auto to = arguments.get("--to")) options.targets = split(*to, ',');
    if (arguments.has("--steps")) {
      const double steps = positive_number(arguments, "--steps");
      if (steps != std::floor(steps) || steps > 1e15) {
        throw UsageError("--steps expects a whole number of steps up to 1e15");
      }
      options.total_steps = static_cast<int64_t>(steps);
    }
    if (arguments.has("--deadline-h"))
      options.deadline_h = positive_number(arguments, "--deadline-h");
    if (arguments.has("--budget")) options.budget = positive_number(arguments, "--budget");
    if ((options.deadline_h > 0 || options.budget > 0) && options.total_steps == 0) {
      throw UsageError("--deadline-h and --budget need --steps (the job's total steps)");
    }
    if (arguments.has("--gradient-mib")) {
      options.gradient_bytes = positive_number(arguments, "--gradient-mib") * 1024.0 * 1024.0;
    }
    if (arguments.has("--max-gpus")) {
      const double count = positive_number(arguments, "--max-gpus");
      if (count != std::floor(count) || count > 8) {
        throw UsageError("--max-gpus expects 1 to 8 (one node is modelled)");
      }
      options.max_gpus = static_cast<int>(count);
    }
    if (const auto prices = arguments.get("--price")) {
      for (const auto& entry : split(*prices, ',')) {
        const size_t equals = entry.find('=');
        if (equals == std::string::npos)
          throw UsageError("--price expects TYPE=PRICE, got '" + entry + "'");
        double price = 0;
        try {
          size_t used = 0;
          price = std::stod(entry.substr(equals + 1), &used);
          if (used != entry.size() - equals - 1) throw std::invalid_argument("trailing text");
        } catch (const std::exception&) {
          throw UsageError("--price expects TYPE=PRICE with a number, got '" + entry + "'");
        }
        if (!std::isfinite(price) || price <= 0) {
          throw UsageError("--price expects a finite price above 0, got '" + entry + "'");
        }
        const auto spec = find_gpu_spec(entry.substr(0, equals));
        if (!spec) throw UsageError("--price: unknown GPU type '" + entry.substr(0, equals) + "'");
        options.price_per_gpu_hour[spec->id] = price;
      }
    }
    try {
      WorkLoader loader;
      {
        std::lock_guard lock(loader_mutex);
        loader = loader_slot();
      }
      if (!loader)
        throw std::runtime_error("advise DB needs the analyzer (run it from fleetscope)");
      const CapturedWork work = loader(db, capture);
      int32_t device = busiest_device(work);
      if (arguments.has("--device")) {
        const double value = arguments.number("--device", 0);
        if (value < 0 || value != std::floor(value) || value > 1e6) {
          throw UsageError("--device expects a device ordinal");
        }
        device = static_cast<int32_t>(value);
      }
      if (device < 0) throw std::runtime_error(work.source + ": no GPU activity to advise on");
      const WorkProfile profile = profile_work(work, device);
      std::optional<GpuSpec> from;
      if (const auto name = arguments.get("--from")) {
        from = find_gpu_spec(*name);
        if (!from) throw UsageError("--from: unknown GPU type '" + *name + "' (see --list-gpus)");
      } else {
        from = find_gpu_spec(profile.gpu_name);
        if (!from) {
          throw std::runtime_error(
              work.source + ": device " + std::to_string(device) + " is '" +
              (profile.gpu_name.empty() ? std::string("unnamed") : profile.gpu_name) +
              "', not in the spec table; name its type with --from (see --list-gpus)");
        }
      }
      for (const auto& id : options.targets) {
        if (!find_gpu_spec(id))
          throw UsageError("--to: unknown GPU type '" + id + "' (see --list-gpus)");
        // Accept any spelling find_gpu_spec understands; advise() takes table ids.
      }
      for (auto& id : options.targets) id = find_gpu_spec(id)->id;
      const Advice advice = advise(profile, *from, options);
      if (format == "json") {
        out << advice_to_json(advice).dump(2) << "\n";
      } else {
        write_advice_table(advice, out);
      }
      return 0;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& error) {
      err << "advise: " << error.what() << "\n";
      return 1;
    }
  } catch (const UsageError& error) {
    err << "advise: " << error.what() << "\n" << kAdviseUsage;
    return 2;
  }
}

}  // namespace fleetscope::sharer
