#include "synthetic_capture.h"

#include <algorithm>
#include <limits>
#include <random>
#include <string>

namespace fleetscope::analyzer::bench {

CaptureData synthetic_capture(size_t gpu_events) {
  CaptureData data;
  data.capture.id = 1;
  data.capture.source_path = "synthetic";
  std::vector<int64_t> kernel_names;
  for (int i = 0; i < 200; ++i)
    kernel_names.push_back(
        data.intern(i % 50 == 0 ? "ncclKernel_AllReduce_RING_LL_Sum_float_" + std::to_string(i)
                                : "void at::native::kernel_" + std::to_string(i) + "<float>(...)"));
  const int64_t launch = data.intern("cudaLaunchKernel");
  const int64_t memcpy_async = data.intern("cudaMemcpyAsync");
  const int64_t memcpy_sync = data.intern("cudaMemcpy");
  const int64_t memset_async = data.intern("cudaMemsetAsync");
  const int64_t pageable =
      data.intern(memcpy_label(store::kMemcpyHtoD, store::kMemPageable, store::kMemDevice));
  const int64_t pinned =
      data.intern(memcpy_label(store::kMemcpyHtoD, store::kMemPinned, store::kMemDevice));
  const int64_t memset_name = data.intern("Memset (Device)");
  const int64_t loader =
      data.intern("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__");
  const int64_t aten_op = data.intern("aten::linear");
  // Two 80-GB, 132-SM GPUs (H100 SXM figures), so few_blocks and memory_near_capacity have their
  // denominators.
  for (int32_t d = 0; d < 2; ++d) {
    store::GpuInfo gpu;
    gpu.id = d, gpu.captureId = 1, gpu.name = "synthetic H100";
    gpu.totalMemory = 80LL << 30, gpu.smCount = 132;
    data.gpus.push_back(gpu);
  }

  auto& g = data.gpu;
  auto& r = data.runtime;
  g.reserve(gpu_events);
  r.reserve(gpu_events);
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> percent(0, 99);
  std::uniform_int_distribution<int64_t> kernel_ns(2'000, 200'000), call_ns(4'000, 12'000);
  std::uniform_int_distribution<int64_t> gap_ns(0, 40'000);
  std::uniform_int_distribution<size_t> name_pick(0, kernel_names.size() - 1);
  std::uniform_int_distribution<int64_t> blocks(1, 4096);
  std::uniform_int_distribution<int> occupancy(5, 100);

  // Events are generated per device in time order and interleaved round-robin, four streams per
  // device, so the arrays come out nearly sorted (as a loader reading start-indexed rows would).
  int64_t clock[2] = {1'700'000'000'000'000'000, 1'700'000'000'000'000'000};
  int64_t step_start[2] = {clock[0], clock[1]};
  int64_t step_count[2] = {0, 0};
  for (size_t i = 0; i < gpu_events; ++i) {
    const int device = static_cast<int>(i & 1);
    const int32_t stream = 7 + static_cast<int32_t>((i >> 1) & 3);
    int64_t& now = clock[device];
    if (i > 0 && i % 500'000 == 0) now += 600'000'000;  // a stall the gap rule must find
    const int kind = percent(rng);
    int64_t duration = kernel_ns(rng);
    const int64_t call = call_ns(rng);
    if (kind < 9 && duration > call) duration = call / 2;  // short kernels
    const int64_t start = now + gap_ns(rng);
    const int64_t call_start = start - call - gap_ns(rng) / 4;
    const int64_t corr = static_cast<int64_t>(i) + 1;
    int64_t name = kernel_names[name_pick(rng)], api = launch, bytes = 0;
    GpuEventKind k = GpuEventKind::kernel;
    int8_t copy = -1, src = -1, dst = -1;
    if (kind >= 90 && kind < 98) {
      k = GpuEventKind::memcpy, copy = store::kMemcpyHtoD, dst = store::kMemDevice;
      src = kind < 92 ? store::kMemPageable : store::kMemPinned;
      name = kind < 92 ? pageable : pinned;
      api = kind == 90 ? memcpy_sync : memcpy_async;
      bytes = 1 << 20;
    } else if (kind >= 98) {
      k = GpuEventKind::memset, name = memset_name, api = memset_async, bytes = 1 << 16;
    }
    g.start.push_back(start), g.end.push_back(start + duration);
    g.device.push_back(device), g.stream.push_back(stream), g.correlation.push_back(corr);
    g.global_pid.push_back(store::global_pid(1000)), g.name_id.push_back(name);
    g.kind.push_back(k), g.work_class.push_back(classify_gpu_work(k, data.name(name)));
    g.bytes.push_back(bytes), g.copy_kind.push_back(copy), g.src_kind.push_back(src);
    g.dst_kind.push_back(dst);
    g.grid_blocks.push_back(k == GpuEventKind::kernel ? blocks(rng) : 0);
    g.est_occupancy.push_back(k == GpuEventKind::kernel ? double(occupancy(rng))
                                                        : std::numeric_limits<double>::quiet_NaN());
    // One CPU op around every fourth launch call (host activity for host_bound).
    if (i % 4 == 0)
      data.cpu_ops.push_back({call_start - 2'000, call_start + call + 1'000, aten_op,
                              store::global_tid(1000, 1000 + device)});
    r.start.push_back(call_start), r.end.push_back(call_start + call);
    r.correlation.push_back(corr), r.name_id.push_back(api);
    r.global_tid.push_back(store::global_tid(1000, 1000 + device));
    now = start + duration;
    if (++step_count[device] == 2'000) {
      store::Iteration it;
      it.captureId = 1, it.globalPid = store::global_pid(1000) + device;
      it.step = static_cast<int64_t>(data.iterations.size());
      it.start = step_start[device], it.end = now;
      data.iterations.push_back(it);
      data.dataloader_ops.push_back({now, now + 3'000'000, loader, 0});
      // Per step: 2 GiB of activations allocated at the step start and freed at its end, on a
      // 20 GiB persistent base (allocated once, before the first step).
      store::MemoryEvent alloc;
      alloc.captureId = 1, alloc.deviceId = device, alloc.globalPid = store::global_pid(1000);
      if (data.iterations.size() <= 2) {
        alloc.ts = it.start - 1, alloc.bytes = 20LL << 30;
        data.memory.push_back(alloc);
      }
      alloc.ts = it.start, alloc.bytes = 2LL << 30;
      data.memory.push_back(alloc);
      alloc.ts = it.end, alloc.bytes = -(2LL << 30);
      data.memory.push_back(alloc);
      now += 3'000'000;  // the next step starts after a 3 ms DataLoader fetch
      step_start[device] = now, step_count[device] = 0;
    }
  }
  // The loader delivers these sorted by start (cpu_ops) and ts (memory).
  std::sort(data.cpu_ops.begin(), data.cpu_ops.end(),
            [](const HostRange& a, const HostRange& b) { return a.start < b.start; });
  std::stable_sort(
      data.memory.begin(), data.memory.end(),
      [](const store::MemoryEvent& a, const store::MemoryEvent& b) { return a.ts < b.ts; });
  data.finalize();
  return data;
}

}  // namespace fleetscope::analyzer::bench
