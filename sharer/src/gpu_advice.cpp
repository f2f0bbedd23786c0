#include "fleetscope/sharer/gpu_advice.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "csv.h"

namespace fleetscope::sharer {

const char* to_string(WorkBound bound) {
  switch (bound) {
    case WorkBound::tensor_compute:
      return "tensor_compute";
    case WorkBound::fp32_compute:
      return "fp32_compute";
    case WorkBound::memory:
      return "memory";
    case WorkBound::host_copy:
      return "host_copy";
    case WorkBound::communication:
      return "communication";
  }
  return "memory";
}

namespace {

bool contains_any(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* needle : needles) {
    if (text.find(needle) != std::string::npos) return true;
  }
  return false;
}

// Nearest-rank quantile (the analyzer's rule for step times: p99 of fewer than 100 steps is the
// slowest step).
double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

WorkBound classify_activity(ActivityKind kind, bool communication, const std::string& name) {
  if (communication) return WorkBound::communication;
  if (kind == ActivityKind::host_copy) return WorkBound::host_copy;
  if (kind != ActivityKind::kernel) return WorkBound::memory;
  std::string lower(name.size(), ' ');
  std::transform(name.begin(), name.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Kernels that move data around a matrix product rather than compute one: matrix-vector
  // products, cuBLAS's split-K reduction, batch norm (cudnn bn_fw/bn_bw), layout transforms.
  if (contains_any(lower,
                   {"gemv", "reduce", "bn_fw", "bn_bw", "batch_norm", "batchnorm", "nchwtonhwc",
                    "nhwctonchw", "transpose", "convert", "softmax", "elementwise", "pooling"})) {
    return WorkBound::memory;
  }
  // Ceer's heavy operations: convolutions and matrix products (cuBLAS/cuDNN/CUTLASS kernel
  // names: volta_sgemm_*, volta_scudnn_*, implicit_convolve_sgemm, *_xmma_*, flash attention).
  if (!contains_any(lower, {"gemm", "conv", "scudnn", "hcudnn", "winograd", "wgrad", "dgrad",
                            "fprop", "cutlass", "xmma", "matmul", "hmma", "gmma", "fmha",
                            "flash_fwd", "flash_bwd", "flash_attn"})) {
    return WorkBound::memory;
  }
  // Tensor-core variants: MMA shapes in cuBLAS names (s884, h1688, s16816, i8816), HMMA/GMMA,
  // CUTLASS tensorop, the xmma family, half-precision names, attention kernels.
  if (contains_any(lower, {"884", "1688", "16816", "8816", "hmma", "gmma", "tensorop", "xmma",
                           "fp16", "bf16", "f16", "half", "fmha", "flash"})) {
    return WorkBound::tensor_compute;
  }
  return WorkBound::fp32_compute;
}

int32_t busiest_device(const CapturedWork& work) {
  std::map<int32_t, int64_t> busy;
  for (const auto& a : work.activities)
    busy[a.device] += std::max<int64_t>(0, a.end_ns - a.start_ns);
  int32_t best = -1;
  int64_t most = -1;
  for (const auto& [device, ns] : busy) {
    if (ns > most) most = ns, best = device;
  }
  return best;
}

WorkProfile profile_work(const CapturedWork& work, int32_t device) {
  WorkProfile profile;
  profile.source = work.source;
  profile.device = device;
  if (auto it = work.gpu_names.find(device); it != work.gpu_names.end()) {
    profile.gpu_name = it->second;
  }
  std::vector<const CapturedActivity*> mine;
  for (const auto& a : work.activities) {
    if (a.device == device && a.end_ns > a.start_ns) mine.push_back(&a);
  }
  if (mine.empty()) {
    throw std::runtime_error(work.source + ": device " + std::to_string(device) +
                             " has no GPU activity to advise on");
  }
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const auto& s : work.steps) {
    if (s.second > s.first) steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end());
  if (steps.empty()) {
    // No step markers: the device's active span is one step.
    profile.steps_from_capture = false;
    int64_t first = mine.front()->start_ns, last = mine.front()->end_ns;
    for (const auto* a : mine)
      first = std::min(first, a->start_ns), last = std::max(last, a->end_ns);
    steps.emplace_back(first, last);
  }
  // Activities of each step (issued in it, else started in it); steps are disjoint in a
  // single-process capture, and where they overlap the latest-starting step takes the activity.
  std::vector<std::vector<const CapturedActivity*>> of_step(steps.size());
  for (const auto* a : mine) {
    if (!profile.steps_from_capture) {
      of_step[0].push_back(a);  // the one step spans every activity
      continue;
    }
    const int64_t t = a->issued_ns >= 0 ? a->issued_ns : a->start_ns;
    auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(t, INT64_MAX));
    if (it == steps.begin()) continue;
    --it;
    if (t >= it->second) continue;  // between steps (warm-up)
    of_step[static_cast<size_t>(it - steps.begin())].push_back(a);
  }
  std::unordered_map<uint32_t, KernelShare> by_name;
  for (size_t s = 0; s < steps.size(); ++s) {
    StepBreakdown step;
    step.step_s = static_cast<double>(steps[s].second - steps[s].first) * 1e-9;
    auto activities = of_step[s];
    std::sort(activities.begin(), activities.end(),
              [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    double union_ns = 0, total_ns = 0;
    double class_ns[kWorkBounds] = {};
    int64_t open_start = 0, open_end = INT64_MIN;
    for (const auto* a : activities) {
      if (a->start_ns > open_end) {
        if (open_end != INT64_MIN) union_ns += static_cast<double>(open_end - open_start);
        open_start = a->start_ns;
        open_end = a->end_ns;
      } else {
        open_end = std::max(open_end, a->end_ns);
      }
      const double duration = static_cast<double>(a->end_ns - a->start_ns);
      const std::string& name = a->name < work.names.size() ? work.names[a->name] : std::string();
      const WorkBound bound = classify_activity(a->kind, a->communication, name);
      class_ns[static_cast<size_t>(bound)] += duration;
      total_ns += duration;
      auto& share = by_name[a->name];
      if (share.count == 0) share.name = name, share.bound = bound;
      share.total_s += duration * 1e-9;
      ++share.count;
    }
    if (open_end != INT64_MIN) union_ns += static_cast<double>(open_end - open_start);
    const double busy_s = union_ns * 1e-9;
    for (size_t c = 0; c < kWorkBounds; ++c) {
      step.busy_s[c] = total_ns > 0 ? busy_s * class_ns[c] / total_ns : 0;
    }
    // GPU work issued in the step may run past its CPU end; the step is then at least as long
    // as its GPU work.
    step.step_s = std::max(step.step_s, busy_s);
    step.idle_s = step.step_s - busy_s;
    profile.steps.push_back(step);
  }
  for (auto& [id, share] : by_name) profile.top_kernels.push_back(std::move(share));
  std::sort(profile.top_kernels.begin(), profile.top_kernels.end(),
            [](const auto& a, const auto& b) { return a.total_s > b.total_s; });
  if (profile.top_kernels.size() > 12) profile.top_kernels.resize(12);
  return profile;
}

double bound_ratio(WorkBound bound, const GpuSpec& from, const GpuSpec& to) {
  switch (bound) {
    case WorkBound::tensor_compute:
      return from.fp16_matrix_tflops / to.fp16_matrix_tflops;
    case WorkBound::fp32_compute:
      return from.fp32_tflops / to.fp32_tflops;
    case WorkBound::memory:
      return from.memory_gbs / to.memory_gbs;
    case WorkBound::host_copy:
      return from.host_link_gbs / to.host_link_gbs;
    case WorkBound::communication:
      return 1.0;
  }
  return 1.0;
}

double predict_step_s(const StepBreakdown& step, const GpuSpec& from, const GpuSpec& to) {
  double predicted = step.idle_s;
  for (size_t c = 0; c < kWorkBounds; ++c) {
    predicted += step.busy_s[c] * bound_ratio(static_cast<WorkBound>(c), from, to);
  }
  return predicted;
}

namespace {

std::string lower_id(const std::string& id) {
  std::string out;
  for (const char c : id)
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

const GpuSpec& spec_by_id(const std::string& id) {
  for (const auto& spec : gpu_specs()) {
    if (lower_id(spec.id) == lower_id(id)) return spec;
  }
  std::string known;
  for (const auto& spec : gpu_specs()) known += (known.empty() ? "" : ", ") + spec.id;
  throw std::invalid_argument("unknown GPU type '" + id + "' (known: " + known + ")");
}

void check_positive(double value, const char* what, bool allow_zero) {
  if (!std::isfinite(value) || value < 0 || (!allow_zero && value == 0)) {
    throw std::invalid_argument(std::string(what) + " must be a finite number above 0, got " +
                                std::to_string(value));
  }
}

// printf-style formatting of up to three numbers (every pattern here is a literal of this file).
std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c);
  return buffer;
}

}  // namespace

Advice advise(const WorkProfile& profile, const GpuSpec& from, const AdviceOptions& options) {
  check_positive(options.deadline_h, "the deadline", true);
  check_positive(options.budget, "the budget", true);
  check_positive(options.gradient_bytes, "the gradient size", true);
  if (options.total_steps < 0) throw std::invalid_argument("the step count must not be negative");
  if (options.max_gpus < 1 || options.max_gpus > 8) {
    throw std::invalid_argument("the GPU count is modelled within one node: 1 to 8, got " +
                                std::to_string(options.max_gpus));
  }
  for (const auto& [id, price] : options.price_per_gpu_hour) {
    spec_by_id(id);
    check_positive(price, ("the price of " + id).c_str(), false);
  }
  std::vector<GpuSpec> targets;
  if (options.targets.empty()) {
    targets = gpu_specs();
  } else {
    for (const auto& id : options.targets) targets.push_back(spec_by_id(id));
  }

  Advice advice;
  advice.profile = profile;
  advice.from = from;
  std::vector<double> measured;
  double total_step = 0;
  double share[kWorkBounds + 1] = {};
  for (const auto& step : profile.steps) {
    measured.push_back(step.step_s);
    total_step += step.step_s;
    for (size_t c = 0; c < kWorkBounds; ++c) share[c] += step.busy_s[c];
    share[kWorkBounds] += step.idle_s;
  }
  for (size_t c = 0; c <= kWorkBounds; ++c) {
    advice.share_of_step[c] = total_step > 0 ? share[c] / total_step : 0;
  }
  advice.measured_mean_step_s = mean(measured);
  advice.measured_p99_step_s = quantile(measured, 0.99);

  const bool timed = options.total_steps > 0;
  for (const auto& spec : targets) {
    TypeAdvice row;
    row.spec = spec;
    std::vector<double> predicted;
    for (const auto& step : profile.steps) predicted.push_back(predict_step_s(step, from, spec));
    row.mean_step_s = mean(predicted);
    row.p99_step_s = quantile(predicted, 0.99);
    row.speedup = row.mean_step_s > 0 ? advice.measured_mean_step_s / row.mean_step_s : 1;
    const auto price = options.price_per_gpu_hour.find(spec.id);
    const auto at_count = [&](int k) {
      const double all_reduce =
          k > 1 ? 2.0 * (k - 1) / k * options.gradient_bytes / (spec.peer_link_gbs * 1e9) : 0.0;
      const double step_s = row.mean_step_s + all_reduce;
      const double steps = std::ceil(static_cast<double>(options.total_steps) / k);
      return std::make_pair(step_s, steps * step_s / 3600.0);
    };
    const int max_count = options.gradient_bytes > 0 ? options.max_gpus : 1;
    int chosen = 1;
    if (timed && options.deadline_h > 0) {
      chosen = -1;
      for (int k = 1; k <= max_count && chosen < 0; ++k) {
        if (at_count(k).second <= options.deadline_h) chosen = k;
      }
      row.meets_deadline = chosen > 0;
      if (chosen < 0) {
        // The fastest count, to say by how much the deadline is missed.
        chosen = 1;
        for (int k = 2; k <= max_count; ++k) {
          if (at_count(k).second < at_count(chosen).second) chosen = k;
        }
      }
    } else if (timed && options.budget > 0 && price != options.price_per_gpu_hour.end()) {
      // The fastest count within the budget.
      int best = -1;
      for (int k = 1; k <= max_count; ++k) {
        const double cost = k * at_count(k).second * price->second;
        if (cost <= options.budget && (best < 0 || at_count(k).second < at_count(best).second)) {
          best = k;
        }
      }
      chosen = best > 0 ? best : 1;
    }
    row.gpus = chosen;
    std::tie(row.step_s_at_count, row.hours) = at_count(chosen);
    if (!timed) row.hours = 0;
    if (timed && price != options.price_per_gpu_hour.end()) {
      row.cost = chosen * row.hours * price->second;
    }
    if (options.budget > 0) {
      row.within_budget = row.cost && *row.cost <= options.budget;
      if (!row.cost) row.note = "no price: budget not checked";
    }
    if (options.gradient_bytes <= 0 && timed && options.deadline_h > 0 && !row.meets_deadline) {
      row.note = "one GPU; more need --gradient-mib (all-reduce size)";
    }
    if (options.gradient_bytes <= 0 && row.note.empty()) row.note = "one GPU";
    advice.types.push_back(std::move(row));
  }

  // The recommendation.
  const TypeAdvice* best = nullptr;
  bool any_priced = false;
  for (const auto& row : advice.types) any_priced = any_priced || row.cost.has_value();
  for (const auto& row : advice.types) {
    if (!row.meets_deadline || (options.budget > 0 && !row.within_budget)) continue;
    if (!timed) {
      if (!best || row.mean_step_s < best->mean_step_s) best = &row;
    } else if (any_priced) {
      if (!row.cost) continue;
      if (!best || *row.cost < *best->cost ||
          (*row.cost == *best->cost && row.hours < best->hours)) {
        best = &row;
      }
    } else if (options.deadline_h > 0) {
      if (!best || row.gpus < best->gpus || (row.gpus == best->gpus && row.hours < best->hours)) {
        best = &row;
      }
    } else if (!best || row.hours < best->hours) {
      best = &row;
    }
  }
  if (!best) {
    advice.recommendation = "no GPU type meets the constraints";
    if (options.deadline_h > 0)
      advice.recommendation += format(" (deadline %.2f h", options.deadline_h) + ")";
    if (options.gradient_bytes <= 0 && options.deadline_h > 0) {
      advice.recommendation += "; only one GPU per type was considered: give --gradient-mib";
    }
    return advice;
  }
  advice.recommended_id = best->spec.id;
  std::string why;
  if (!timed) {
    why = "fastest step";
  } else if (any_priced) {
    why = "cheapest" + std::string(options.deadline_h > 0 ? " within the deadline" : "") +
          (options.budget > 0 ? " within the budget" : "");
  } else if (options.deadline_h > 0) {
    why = "fewest GPUs within the deadline, then fastest";
  } else {
    why = "fastest";
  }
  advice.recommendation =
      std::to_string(best->gpus) + " x " + best->spec.id + ": " + why +
      format(" (predicted step %.4f s, %.2fx the measured one", best->mean_step_s, best->speedup);
  if (timed) advice.recommendation += format("; %.2f h", best->hours);
  if (best->cost) advice.recommendation += format(", cost %.2f", *best->cost);
  advice.recommendation += ")";
  return advice;
}

nlohmann::json advice_to_json(const Advice& advice) {
  nlohmann::json out;
  out["source"] = advice.profile.source;
  out["device"] = advice.profile.device;
  out["gpu_name"] = advice.profile.gpu_name;
  out["from"] = advice.from.id;
  out["steps"] = advice.profile.steps.size();
  out["steps_from_capture"] = advice.profile.steps_from_capture;
  out["measured_mean_step_s"] = advice.measured_mean_step_s;
  out["measured_p99_step_s"] = advice.measured_p99_step_s;
  nlohmann::json share;
  for (size_t c = 0; c < kWorkBounds; ++c) {
    share[to_string(static_cast<WorkBound>(c))] = advice.share_of_step[c];
  }
  share["idle"] = advice.share_of_step[kWorkBounds];
  out["share_of_step"] = share;
  out["top_kernels"] = nlohmann::json::array();
  for (const auto& k : advice.profile.top_kernels) {
    out["top_kernels"].push_back({{"name", k.name},
                                  {"bound", to_string(k.bound)},
                                  {"total_s", k.total_s},
                                  {"count", k.count}});
  }
  out["types"] = nlohmann::json::array();
  for (const auto& row : advice.types) {
    nlohmann::json r{{"type", row.spec.id},
                     {"mean_step_s", row.mean_step_s},
                     {"p99_step_s", row.p99_step_s},
                     {"speedup", row.speedup},
                     {"gpus", row.gpus},
                     {"step_s_at_count", row.step_s_at_count},
                     {"hours", row.hours},
                     {"meets_deadline", row.meets_deadline},
                     {"within_budget", row.within_budget},
                     {"spec_source", row.spec.source}};
    r["cost"] = row.cost ? nlohmann::json(*row.cost) : nlohmann::json(nullptr);
    if (!row.note.empty()) r["note"] = row.note;
    out["types"].push_back(r);
  }
  out["recommended"] = advice.recommended_id;
  out["recommendation"] = advice.recommendation;
  return out;
}

void write_advice_table(const Advice& advice, std::ostream& out) {
  char line[512];
  out << advice.profile.source << " device " << advice.profile.device << " ("
      << (advice.profile.gpu_name.empty() ? "name unknown" : advice.profile.gpu_name) << ") as "
      << advice.from.id << ": " << advice.profile.steps.size()
      << (advice.profile.steps_from_capture ? " steps" : " step (no step markers: the GPU's span)")
      << format(", mean %.4f s, p99 %.4f s\n", advice.measured_mean_step_s,
                advice.measured_p99_step_s);
  out << "step time by bound:";
  for (size_t c = 0; c < kWorkBounds; ++c) {
    std::snprintf(line, sizeof line, " %s %.1f%%", to_string(static_cast<WorkBound>(c)),
                  100 * advice.share_of_step[c]);
    out << line;
  }
  out << format(" idle %.1f%%\n", 100 * advice.share_of_step[kWorkBounds]);
  // The kernels that weigh most, with their class: the classification is by name, so the user
  // can see what it decided.
  const size_t shown = std::min<size_t>(5, advice.profile.top_kernels.size());
  for (size_t k = 0; k < shown; ++k) {
    const auto& kernel = advice.profile.top_kernels[k];
    const std::string name =
        kernel.name.size() > 70 ? kernel.name.substr(0, 67) + "..." : kernel.name;
    std::snprintf(line, sizeof line, "  %-70s %-14s %9.3f s %7lld x\n", name.c_str(),
                  to_string(kernel.bound), kernel.total_s, static_cast<long long>(kernel.count));
    out << line;
  }
  std::snprintf(line, sizeof line, "%-16s %11s %11s %8s %5s %9s %10s %s\n", "TYPE", "STEP_S",
                "P99_S", "SPEEDUP", "GPUS", "HOURS", "COST", "NOTE");
  out << line;
  for (const auto& row : advice.types) {
    const std::string cost = row.cost ? format("%.2f", *row.cost) : "-";
    std::string note = row.note;
    if (!row.meets_deadline) note = "misses the deadline" + (note.empty() ? "" : "; " + note);
    std::snprintf(line, sizeof line, "%-16s %11.5f %11.5f %8.2f %5d %9.2f %10s %s\n",
                  row.spec.id.c_str(), row.mean_step_s, row.p99_step_s, row.speedup, row.gpus,
                  row.hours, cost.c_str(), note.c_str());
    out << line;
  }
  out << "recommendation: " << advice.recommendation << "\n";
}

std::vector<PublishedStepRatio> parse_published_step_ratios(const std::string& text,
                                                            const std::string& source) {
  const auto table = csv::parse(text, source, /*has_header=*/true, 0, /*skip_comments=*/true);
  const size_t job = table.column("job"), from = table.column("from"), to = table.column("to");
  const size_t from_rate = table.column("from_steps_per_s");
  const size_t to_rate = table.column("to_steps_per_s");
  std::vector<PublishedStepRatio> runs;
  for (const auto& row : table.rows) {
    PublishedStepRatio run;
    run.job = row.fields[job];
    for (const size_t column : {from, to}) {
      if (!find_gpu_spec(row.fields[column]) ||
          lower_id(find_gpu_spec(row.fields[column])->id) != lower_id(row.fields[column])) {
        csv::fail_value(table, row, column, "GPU type", "an id of the advisor's spec table");
      }
    }
    run.from = row.fields[from];
    run.to = row.fields[to];
    run.from_steps_per_s =
        csv::to_double_in(table, row, from_rate, "steps per second", 1e-12, 1e12);
    run.to_steps_per_s = csv::to_double_in(table, row, to_rate, "steps per second", 1e-12, 1e12);
    run.source = source + ":" + std::to_string(row.line);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<RatioCheck> check_published_ratios(const std::vector<PublishedStepRatio>& runs) {
  std::vector<RatioCheck> checks;
  for (const auto& run : runs) {
    const GpuSpec& from = spec_by_id(run.from);
    const GpuSpec& to = spec_by_id(run.to);
    RatioCheck check;
    check.run = run;
    check.measured_speedup = run.to_steps_per_s / run.from_steps_per_s;
    check.memory_bound_speedup = 1.0 / bound_ratio(WorkBound::memory, from, to);
    check.compute_bound_speedup = 1.0 / bound_ratio(WorkBound::fp32_compute, from, to);
    const double low = std::min(check.memory_bound_speedup, check.compute_bound_speedup);
    const double high = std::max(check.memory_bound_speedup, check.compute_bound_speedup);
    const double m = check.measured_speedup;
    check.error = m < low ? (low - m) / m : m > high ? (m - high) / m : 0.0;
    checks.push_back(check);
  }
  return checks;
}

}  // namespace fleetscope::sharer
