#include "fleetscope/analyzer/kernel_sequences.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fleetscope/analyzer/op_tables.h"

namespace fleetscope::analyzer {

std::string KernelSequence::pattern() const {
  std::string text = op;
  for (const std::string& k : kernels) text += "|" + k;
  return text;
}

std::vector<KernelSequence> frequent_kernel_sequences(const CaptureData& data,
                                                      const KernelSequenceOptions& options) {
  const OpTree tree = build_op_tree(data);
  const auto& ops = data.cpu_ops;
  // Roots: matching ops at the smallest depth any matching op has.
  int32_t min_depth = INT32_MAX;
  std::vector<bool> matches(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i)
    if (data.name(ops[i].name_id).find(options.operator_name) != std::string::npos)
      matches[i] = true, min_depth = std::min(min_depth, tree.depth[i]);
  // Each GPU event goes to its root: HTA's, the matching ancestor at the global smallest depth
  // (at most one: roots share a depth, so none encloses another); or, per chain, the outermost
  // matching ancestor.
  std::map<int64_t, std::vector<uint32_t>> events_of_root;
  for (uint32_t g = 0; g < data.gpu.size(); ++g) {
    const int64_t call = data.launch_call_of[g];
    if (call < 0) continue;
    int64_t root = -1;
    for (int64_t op = tree.op_of_call[call]; op >= 0; op = tree.parent[op])
      if (matches[op] && (options.outermost_per_chain || tree.depth[op] == min_depth)) root = op;
    if (root >= 0) events_of_root[root].push_back(g);
  }
  std::map<std::string, KernelSequence> by_pattern;
  for (auto& [root, events] : events_of_root) {
    if (events.size() < options.min_pattern_len) continue;
    std::stable_sort(events.begin(), events.end(),
                     [&](uint32_t a, uint32_t b) { return data.gpu.start[a] < data.gpu.start[b]; });
    KernelSequence s;
    s.op = data.name(ops[root].name_id);
    for (uint32_t i : events) s.kernels.push_back(data.name(data.gpu.name_id[i]));
    KernelSequence& total = by_pattern.try_emplace(s.pattern(), s).first->second;
    ++total.count;
    total.cpu_op_ns += ops[root].end - ops[root].start;
    for (size_t k = 0; k < events.size(); ++k) {
      total.gpu_ns += data.gpu.duration(events[k]);
      if (k > 0)
        total.gap_ns +=
            std::max<int64_t>(0, data.gpu.start[events[k]] - data.gpu.end[events[k - 1]]);
    }
  }
  std::vector<KernelSequence> out;
  for (auto& [text, s] : by_pattern) out.push_back(std::move(s));
  // HTA's order: count descending, then the pattern text ascending (by_pattern's order).
  std::stable_sort(out.begin(), out.end(), [](const KernelSequence& a, const KernelSequence& b) {
    return a.count > b.count;
  });
  return out;
}

}  // namespace fleetscope::analyzer
