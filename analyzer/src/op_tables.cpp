#include "fleetscope/analyzer/op_tables.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace fleetscope::analyzer {

OpTree build_op_tree(const CaptureData& data) {
  OpTree tree;
  const auto& ops = data.cpu_ops;
  tree.depth.assign(ops.size(), 0);
  tree.parent.assign(ops.size(), -1);
  tree.op_of_call.assign(data.runtime.size(), -1);
  std::map<int64_t, std::vector<int64_t>> ops_by_thread;
  for (size_t i = 0; i < ops.size(); ++i) ops_by_thread[ops[i].global_tid].push_back(int64_t(i));
  std::map<int64_t, std::vector<int64_t>> calls_by_thread;
  for (size_t c = 0; c < data.runtime.size(); ++c)
    calls_by_thread[data.runtime.global_tid[c]].push_back(int64_t(c));
  for (auto& [tid, list] : ops_by_thread) {
    std::stable_sort(list.begin(), list.end(), [&](int64_t a, int64_t b) {
      return ops[a].start != ops[b].start ? ops[a].start < ops[b].start : ops[a].end > ops[b].end;
    });
    // Walk ops and this thread's calls together in start order, with a stack of open ops.
    const auto& calls = calls_by_thread[tid];
    size_t next_call = 0;
    std::vector<int64_t> open;
    auto close_before = [&](int64_t t) {
      while (!open.empty() && ops[open.back()].end <= t) open.pop_back();
    };
    auto assign_calls_before = [&](int64_t t) {
      for (; next_call < calls.size() && data.runtime.start[calls[next_call]] < t; ++next_call) {
        const int64_t c = calls[next_call];
        close_before(data.runtime.start[c]);
        tree.op_of_call[c] = open.empty() ? -1 : open.back();
      }
    };
    for (int64_t i : list) {
      assign_calls_before(ops[i].start);
      close_before(ops[i].start);
      tree.depth[i] = static_cast<int32_t>(open.size());
      tree.parent[i] = open.empty() ? -1 : open.back();
      open.push_back(i);
    }
    assign_calls_before(INT64_MAX);
  }
  return tree;
}

std::vector<OperatorRow> operator_table(const CaptureData& data, const OpTree& tree) {
  const auto& ops = data.cpu_ops;
  std::vector<int64_t> children_ns(ops.size(), 0), device(ops.size(), 0),
      self_device(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i)
    if (tree.parent[i] >= 0) children_ns[tree.parent[i]] += ops[i].end - ops[i].start;
  for (size_t g = 0; g < data.gpu.size(); ++g) {
    const int64_t call = data.launch_call_of[g];
    if (call < 0 || tree.op_of_call[call] < 0) continue;
    const int64_t d = data.gpu.duration(g);
    self_device[tree.op_of_call[call]] += d;
    for (int64_t op = tree.op_of_call[call]; op >= 0; op = tree.parent[op]) device[op] += d;
  }
  std::map<int64_t, OperatorRow> by_name;
  for (size_t i = 0; i < ops.size(); ++i) {
    OperatorRow& row = by_name[ops[i].name_id];
    row.name = data.name(ops[i].name_id);
    ++row.calls;
    row.host_ns += ops[i].end - ops[i].start;
    row.self_host_ns += ops[i].end - ops[i].start - children_ns[i];
    row.device_ns += device[i];
    row.self_device_ns += self_device[i];
  }
  std::vector<OperatorRow> out;
  for (auto& [id, row] : by_name) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const OperatorRow& a, const OperatorRow& b) {
    return a.self_device_ns != b.self_device_ns ? a.self_device_ns > b.self_device_ns
                                                : a.host_ns > b.host_ns;
  });
  return out;
}

std::vector<KernelRow> kernel_table(const CaptureData& data, const OpTree& tree) {
  const auto& g = data.gpu;
  std::map<int32_t, int32_t> sms;
  for (const auto& gpu : data.gpus)
    if (gpu.smCount && *gpu.smCount > 0) sms[gpu.id] = *gpu.smCount;
  struct Sum {
    KernelRow row;
    double blocks_weighted = 0, occupancy_weighted = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Sum> groups;  // (kernel name id, op index name id)
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] != GpuEventKind::kernel) continue;
    const int64_t call = data.launch_call_of[i];
    const int64_t op = call >= 0 ? tree.op_of_call[call] : -1;
    const int64_t op_name = op >= 0 ? data.cpu_ops[op].name_id : INT64_MIN;
    Sum& s = groups[{g.name_id[i], op_name}];
    const int64_t d = g.duration(i);
    if (s.row.calls == 0) {
      s.row.name = data.name(g.name_id[i]);
      s.row.op = op >= 0 ? data.name(op_name) : "N/A";
      s.row.min_ns = d;
    }
    ++s.row.calls;
    s.row.sum_ns += d;
    s.row.max_ns = std::max(s.row.max_ns, d), s.row.min_ns = std::min(s.row.min_ns, d);
    const auto sm = sms.find(g.device[i]);
    const bool has_blocks = i < g.grid_blocks.size() && g.grid_blocks[i] > 0 && sm != sms.end();
    if (has_blocks) s.blocks_weighted += double(g.grid_blocks[i]) / double(sm->second) * double(d);
    if (i < g.est_occupancy.size() && !std::isnan(g.est_occupancy[i]))
      s.occupancy_weighted += g.est_occupancy[i] * double(d);
  }
  std::vector<KernelRow> out;
  for (auto& [key, s] : groups) {
    KernelRow row = std::move(s.row);
    row.mean_ns = double(row.sum_ns) / double(row.calls);
    if (row.sum_ns > 0) {
      row.blocks_per_sm = s.blocks_weighted / double(row.sum_ns);
      row.est_occupancy = s.occupancy_weighted / double(row.sum_ns);
    }
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelRow& a, const KernelRow& b) { return a.sum_ns > b.sum_ns; });
  return out;
}

}  // namespace fleetscope::analyzer
