#include "fleetscope/analyzer/aten_op_delay.h"

#include <algorithm>
#include <climits>
#include <map>
#include <regex>
#include <tuple>
#include <unordered_map>

#include "fleetscope/analyzer/metrics.h"

namespace fleetscope::analyzer {

namespace {

// HTA KERNEL_LAUNCH_CATEGORY_PATTERN, matched from the start of the name (pandas str.match).
bool is_kernel_launch(const std::string& name) {
  static const std::regex pattern("^(?:(cuda.*LaunchKernel)|(cuLaunchKernel)|(runFunction))");
  return std::regex_search(name, pattern);
}

struct OpInstance {
  std::vector<int64_t> kernel_names;  // name ids, in launch order
  int64_t first_aten_op_delay = 0, first_runtime_delay = 0;
};

}  // namespace

std::vector<AtenOpKernels> aten_op_kernels_and_delay(const CaptureData& data,
                                                     bool hta_last_step_filter) {
  const HtaStepFilter filter = HtaStepFilter::for_capture(data, hta_last_step_filter);
  const auto keeps_cpu = [&](int64_t start) {
    return !filter.active || start < filter.last_step_start;
  };
  // The aten ops kept, by start (ties: the longer first, so the last one wrapping a call among
  // equal starts is the shortest).
  std::vector<size_t> ops;
  for (size_t k = 0; k < data.cpu_ops.size(); ++k) {
    const HostRange& op = data.cpu_ops[k];
    if (data.name(op.name_id).rfind("aten::", 0) == 0 && keeps_cpu(op.start)) ops.push_back(k);
  }
  std::stable_sort(ops.begin(), ops.end(), [&](size_t a, size_t b) {
    const HostRange &x = data.cpu_ops[a], &y = data.cpu_ops[b];
    return x.start != y.start ? x.start < y.start : x.end > y.end;
  });
  // Largest end among ops[0..k]: a backward scan stops once no earlier op can wrap the call.
  std::vector<int64_t> max_end_upto(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    max_end_upto[k] = std::max(k ? max_end_upto[k - 1] : INT64_MIN, data.cpu_ops[ops[k]].end);
  // The GPU event of each launch call.
  std::unordered_map<int64_t, size_t> gpu_of_call;
  for (size_t i = 0; i < data.gpu.size() && i < data.launch_call_of.size(); ++i)
    if (data.launch_call_of[i] >= 0 && filter.keeps_gpu_event(data, i))
      gpu_of_call.emplace(data.launch_call_of[i], i);

  std::unordered_map<int64_t, bool> launch_name;  // name id -> is a kernel launch
  const RuntimeCalls& r = data.runtime;
  std::vector<size_t> calls;
  for (size_t c = 0; c < r.size(); ++c) {
    auto [it, fresh] = launch_name.try_emplace(r.name_id[c], false);
    if (fresh) it->second = is_kernel_launch(data.name(r.name_id[c]));
    if (it->second && keeps_cpu(r.start[c]) && gpu_of_call.count(static_cast<int64_t>(c)))
      calls.push_back(c);
  }
  std::stable_sort(calls.begin(), calls.end(),
                   [&](size_t a, size_t b) { return r.start[a] < r.start[b]; });

  // (thread, op name, op start) -> the instance's launches.
  std::map<std::tuple<int64_t, int64_t, int64_t>, OpInstance> instances;
  for (size_t c : calls) {
    // The last-starting op that starts at or before the call and wraps it.
    const auto first_after =
        std::upper_bound(ops.begin(), ops.end(), r.start[c],
                         [&](int64_t start, size_t k) { return start < data.cpu_ops[k].start; });
    const HostRange* deepest = nullptr;
    for (auto it = first_after; it != ops.begin();) {
      --it;
      if (max_end_upto[static_cast<size_t>(it - ops.begin())] < r.end[c]) break;
      const HostRange& op = data.cpu_ops[*it];
      if (op.end >= r.end[c]) {
        deepest = &op;
        break;
      }
    }
    if (!deepest) continue;
    const size_t gpu = gpu_of_call.at(static_cast<int64_t>(c));
    OpInstance& instance = instances[{deepest->global_tid, deepest->name_id, deepest->start}];
    if (instance.kernel_names.empty()) {
      instance.first_aten_op_delay = r.start[c] - deepest->start;
      instance.first_runtime_delay = data.gpu.start[gpu] - r.start[c];
    }
    instance.kernel_names.push_back(data.gpu.name_id[gpu]);
  }

  struct Sums {
    int64_t count = 0;
    double aten_op_delay = 0, runtime_delay = 0;
  };
  std::map<std::pair<int64_t, std::vector<int64_t>>, Sums> groups;
  for (const auto& [key, instance] : instances) {
    Sums& s = groups[{std::get<1>(key), instance.kernel_names}];
    ++s.count;
    s.aten_op_delay += double(instance.first_aten_op_delay);
    s.runtime_delay += double(instance.first_runtime_delay);
  }
  std::vector<AtenOpKernels> out;
  for (const auto& [key, s] : groups) {
    AtenOpKernels row;
    row.op = data.name(key.first);
    for (int64_t id : key.second) row.kernels.push_back(data.name(id));
    row.count = s.count;
    row.avg_aten_op_launch_delay_ns = s.aten_op_delay / double(s.count);
    row.avg_runtime_delay_ns = s.runtime_delay / double(s.count);
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const AtenOpKernels& a, const AtenOpKernels& b) {
    return std::tie(b.count, a.op, a.kernels) < std::tie(a.count, b.op, b.kernels);
  });
  return out;
}

}  // namespace fleetscope::analyzer
