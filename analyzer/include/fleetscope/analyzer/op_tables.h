// CPU operator nesting and the PyTorch profiler TensorBoard plugin's operator and kernel tables
// (pytorch/kineto tb_plugin torch_tb_profiler/profiler/op_agg.py aggregate_ops /
// aggregate_kernels, kernel_parser.py).
//
// Op tree: per thread, CPU ops nest by time (an op inside another's [start, end) is its child);
// a runtime call's op is the innermost op on its thread enclosing its start; a GPU event's op is
// its launching call's op.
//
// Operator table, per op name (the plugin's operator view grouped by name):
//   calls; host_ns = Σ op durations; self_host_ns = Σ (op duration − its direct children's);
//   device_ns = Σ durations of the GPU events launched inside the op or any child op;
//   self_device_ns = Σ durations of those launched by the op itself (not by a child).
// Kernel table, per (kernel name, op name) (the plugin's kernel view; "N/A" without an op):
//   calls, sum/mean/max/min duration, blocks_per_sm and est_occupancy as duration-weighted means
//   with unknown values as 0 (the plugin's fillna(0)); blocks per SM = grid blocks / SM count.
//   The plugin also splits by grid, block, registers and shared memory, which the store does not
//   keep per kernel, and marks tensor-core kernels by its allowlist (not reproduced).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

struct OpTree {
  std::vector<int32_t> depth;       // per data.cpu_ops index: enclosing ops on its thread
  std::vector<int64_t> parent;      // per cpu op: innermost enclosing op, or -1
  std::vector<int64_t> op_of_call;  // per runtime call: innermost enclosing op, or -1
};
OpTree build_op_tree(const CaptureData& data);

struct OperatorRow {
  std::string name;
  int64_t calls = 0;
  int64_t host_ns = 0, self_host_ns = 0, device_ns = 0, self_device_ns = 0;
};
// By self_device_ns, then host_ns, descending.
std::vector<OperatorRow> operator_table(const CaptureData& data, const OpTree& tree);

struct KernelRow {
  std::string name, op;
  int64_t calls = 0, sum_ns = 0, max_ns = 0, min_ns = 0;
  double mean_ns = 0, blocks_per_sm = 0, est_occupancy = 0;
};
// By sum_ns descending.
std::vector<KernelRow> kernel_table(const CaptureData& data, const OpTree& tree);

}  // namespace fleetscope::analyzer
