// How a GPU activity row (kernel, memcpy, memset) becomes one entry of GpuEvents' columns
// (capture_data.h). The loader (rows of a database) and CaptureSink (rows an import streams)
// append through these, so the columns of the other kinds (no bytes for a kernel, no launch shape
// for a copy, a memset's memory kind as its destination) are filled in this one place.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "fleetscope/analyzer/capture_data.h"

namespace fleetscope::analyzer {

// The columns every GPU activity row has.
struct GpuRow {
  int64_t start = 0, end = 0;
  int32_t device = 0, stream = 0;
  int64_t correlation = -1, global_pid = -1;  // -1 when the row has none
  int64_t name_id = 0;
};

namespace gpu_rows_detail {
inline void push_common(GpuEvents& g, const GpuRow& row, GpuEventKind kind, WorkClass work_class,
                        int64_t bytes) {
  g.start.push_back(row.start);
  g.end.push_back(row.end);
  g.device.push_back(row.device);
  g.stream.push_back(row.stream);
  g.correlation.push_back(row.correlation);
  g.global_pid.push_back(row.global_pid);
  g.name_id.push_back(row.name_id);
  g.kind.push_back(kind);
  g.work_class.push_back(work_class);
  g.bytes.push_back(bytes);
}
}  // namespace gpu_rows_detail

inline void push_kernel(GpuEvents& g, const GpuRow& row, WorkClass work_class, int64_t grid_blocks,
                        double est_occupancy) {
  gpu_rows_detail::push_common(g, row, GpuEventKind::kernel, work_class, 0);
  g.copy_kind.push_back(-1), g.src_kind.push_back(-1), g.dst_kind.push_back(-1);
  g.grid_blocks.push_back(grid_blocks);
  g.est_occupancy.push_back(est_occupancy);
}

inline void push_memcpy(GpuEvents& g, const GpuRow& row, int64_t bytes, int32_t copy_kind,
                        std::optional<int32_t> src_kind, std::optional<int32_t> dst_kind) {
  gpu_rows_detail::push_common(g, row, GpuEventKind::memcpy, WorkClass::memory, bytes);
  g.copy_kind.push_back(static_cast<int8_t>(copy_kind));
  g.src_kind.push_back(static_cast<int8_t>(src_kind.value_or(-1)));
  g.dst_kind.push_back(static_cast<int8_t>(dst_kind.value_or(-1)));
  g.grid_blocks.push_back(0);  // no launch shape
  g.est_occupancy.push_back(std::nan(""));
}

inline void push_memset(GpuEvents& g, const GpuRow& row, int64_t bytes,
                        std::optional<int32_t> mem_kind) {
  gpu_rows_detail::push_common(g, row, GpuEventKind::memset, WorkClass::memory, bytes);
  g.copy_kind.push_back(-1), g.src_kind.push_back(-1);
  g.dst_kind.push_back(static_cast<int8_t>(mem_kind.value_or(-1)));
  g.grid_blocks.push_back(0);
  g.est_occupancy.push_back(std::nan(""));
}

}  // namespace fleetscope::analyzer
