#include "fleetscope/daemon/batch_decoder.h"

#include <utility>

namespace fleetscope::daemon {
namespace {

// A Thrift optional field as std::optional (the generated code marks set fields in __isset).
#define FS_GET(rec, field)                                                               \
  ((rec).__isset.field ? std::optional<std::decay_t<decltype((rec).field)>>((rec).field) \
                       : std::nullopt)

}  // namespace

size_t row_count(const rpc::RecordBatch& b) {
  return b.kernels.size() + b.memcpys.size() + b.memsets.size() + b.runtime.size() +
         b.syncs.size() + b.nvtx.size() + b.iterations.size() + b.memory.size() +
         b.external_correlations.size();
}

size_t write_batch(rpc::RecordBatch&& b, int64_t capture_id, store::RowSink& sink) {
  for (auto& r : b.gpus) {
    store::GpuInfo gpu;
    gpu.id = r.id;
    gpu.captureId = capture_id;
    gpu.name = std::move(r.name);
    gpu.uuid = FS_GET(r, uuid);
    gpu.totalMemory = FS_GET(r, totalMemory);
    gpu.smCount = FS_GET(r, smCount);
    gpu.computeMajor = FS_GET(r, computeMajor);
    gpu.computeMinor = FS_GET(r, computeMinor);
    sink.add_gpu(gpu);
  }
  auto dim = [](const std::vector<int32_t>& v, size_t i) { return i < v.size() ? v[i] : 0; };
  for (auto& r : b.kernels) {
    store::Kernel k;
    k.start = r.start_ns;
    k.end = r.end_ns;
    k.deviceId = r.deviceId;
    k.contextId = FS_GET(r, contextId);
    k.streamId = r.streamId;
    k.correlationId = FS_GET(r, correlationId);
    k.globalPid = FS_GET(r, globalPid);
    k.demangledName = std::move(r.demangledName);
    if (r.__isset.shortName) k.shortName = std::move(r.shortName);
    k.gridX = dim(r.grid, 0), k.gridY = dim(r.grid, 1), k.gridZ = dim(r.grid, 2);
    k.blockX = dim(r.block, 0), k.blockY = dim(r.block, 1), k.blockZ = dim(r.block, 2);
    k.registersPerThread = FS_GET(r, registersPerThread);
    k.staticSharedMemory = FS_GET(r, staticSharedMemory);
    k.dynamicSharedMemory = FS_GET(r, dynamicSharedMemory);
    k.localMemoryPerThread = FS_GET(r, localMemoryPerThread);
    k.graphId = FS_GET(r, graphId);
    k.graphNodeId = FS_GET(r, graphNodeId);
    k.launchType = FS_GET(r, launchType);
    k.captureId = capture_id;
    sink.add(std::move(k));
  }
  for (auto& r : b.memcpys) {
    store::Memcpy m;
    m.start = r.start_ns;
    m.end = r.end_ns;
    m.deviceId = r.deviceId;
    m.contextId = FS_GET(r, contextId);
    m.streamId = r.streamId;
    m.correlationId = FS_GET(r, correlationId);
    m.globalPid = FS_GET(r, globalPid);
    m.bytes = r.bytes;
    m.copyKind = r.copyKind;
    m.srcKind = FS_GET(r, srcKind);
    m.dstKind = FS_GET(r, dstKind);
    m.srcDeviceId = FS_GET(r, srcDeviceId);
    m.dstDeviceId = FS_GET(r, dstDeviceId);
    m.graphNodeId = FS_GET(r, graphNodeId);
    m.captureId = capture_id;
    sink.add(std::move(m));
  }
  for (auto& r : b.memsets) {
    store::Memset m;
    m.start = r.start_ns;
    m.end = r.end_ns;
    m.deviceId = r.deviceId;
    m.contextId = FS_GET(r, contextId);
    m.streamId = r.streamId;
    m.correlationId = FS_GET(r, correlationId);
    m.globalPid = FS_GET(r, globalPid);
    m.value = FS_GET(r, value);
    m.bytes = r.bytes;
    m.memKind = FS_GET(r, memKind);
    m.graphNodeId = FS_GET(r, graphNodeId);
    m.captureId = capture_id;
    sink.add(std::move(m));
  }
  for (auto& r : b.runtime) {
    store::RuntimeCall c;
    c.start = r.start_ns;
    c.end = r.end_ns;
    c.eventClass = r.driver ? store::ApiClass::driver : store::ApiClass::runtime;
    c.globalTid = r.globalTid;
    c.correlationId = FS_GET(r, correlationId);
    c.name = std::move(r.name);
    c.returnValue = FS_GET(r, returnValue);
    c.cbid = FS_GET(r, cbid);
    c.captureId = capture_id;
    sink.add(std::move(c));
  }
  for (auto& r : b.syncs) {
    store::Sync s;
    s.start = r.start_ns;
    s.end = r.end_ns;
    s.deviceId = FS_GET(r, deviceId);
    s.contextId = FS_GET(r, contextId);
    s.streamId = FS_GET(r, streamId);
    s.correlationId = FS_GET(r, correlationId);
    s.globalPid = FS_GET(r, globalPid);
    s.globalTid = FS_GET(r, globalTid);
    s.syncType = r.syncType;
    s.eventId = FS_GET(r, eventId);
    s.captureId = capture_id;
    sink.add(std::move(s));
  }
  for (auto& r : b.nvtx) {
    store::NvtxEvent n;
    n.start = r.start_ns;
    n.end = FS_GET(r, end_ns);
    n.eventType = r.eventType;
    n.rangeId = FS_GET(r, rangeId);
    n.text = std::move(r.text);
    n.domainId = FS_GET(r, domainId);
    n.globalTid = FS_GET(r, globalTid);
    n.captureId = capture_id;
    sink.add(std::move(n));
  }
  for (auto& r : b.iterations) {
    store::Iteration it;
    it.captureId = capture_id;
    it.globalPid = FS_GET(r, globalPid);
    it.step = r.step;
    it.start = r.start_ns;
    it.end = r.end_ns;
    it.source = std::move(r.source);
    sink.add(std::move(it));
  }
  for (auto& r : b.memory) {
    store::MemoryEvent m;
    m.ts = r.ts;
    m.captureId = capture_id;
    m.globalPid = FS_GET(r, globalPid);
    m.deviceId = r.deviceId;
    m.address = FS_GET(r, address);
    m.bytes = r.bytes;
    m.total_allocated = FS_GET(r, totalAllocated);
    m.total_reserved = FS_GET(r, totalReserved);
    sink.add(std::move(m));
  }
  for (auto& r : b.external_correlations) {
    store::ExternalCorrelation e;
    e.captureId = capture_id;
    e.correlationId = r.correlationId;
    e.externalKind = r.externalKind;
    e.externalId = r.externalId;
    sink.add(std::move(e));
  }
  return row_count(b);
}

}  // namespace fleetscope::daemon
