#include "fleetscope/agent_link/batch_builder.h"

namespace fleetscope::agent_link {

using wire::Writer;

// Field ids: the RecordBatch struct and the *Record structs of schema/fleetscope.thrift.
Writer& BatchBuilder::next(Table table, bool is_row) {
  ++tables_[table].count;
  if (is_row) ++rows_;
  return tables_[table].w;
}

void BatchBuilder::add(const store::Kernel& r) {
  Writer& w = next(kKernels, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.i32_field(3, r.deviceId);
  w.i32_field(4, r.contextId);
  w.i32_field(5, r.streamId);
  w.i64_field(6, r.correlationId);
  w.i64_field(7, r.globalPid);
  w.str_field(8, r.demangledName);
  if (!r.shortName.empty()) w.str_field(9, r.shortName);
  w.field(wire::kList, 10), w.list(wire::kI32, 3), w.i32(r.gridX), w.i32(r.gridY), w.i32(r.gridZ);
  w.field(wire::kList, 11), w.list(wire::kI32, 3), w.i32(r.blockX), w.i32(r.blockY),
      w.i32(r.blockZ);
  w.i32_field(12, r.registersPerThread);
  w.i32_field(13, r.staticSharedMemory);
  w.i32_field(14, r.dynamicSharedMemory);
  w.i32_field(15, r.localMemoryPerThread);
  w.i64_field(16, r.graphId);
  w.i64_field(17, r.graphNodeId);
  w.i32_field(18, r.launchType);
  w.stop();
}

void BatchBuilder::add(const store::Memcpy& r) {
  Writer& w = next(kMemcpys, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.i32_field(3, r.deviceId);
  w.i32_field(4, r.contextId);
  w.i32_field(5, r.streamId);
  w.i64_field(6, r.correlationId);
  w.i64_field(7, r.globalPid);
  w.i64_field(8, r.bytes);
  w.i32_field(9, r.copyKind);
  w.i32_field(10, r.srcKind);
  w.i32_field(11, r.dstKind);
  w.i32_field(12, r.srcDeviceId);
  w.i32_field(13, r.dstDeviceId);
  w.i64_field(14, r.graphNodeId);
  w.stop();
}

void BatchBuilder::add(const store::Memset& r) {
  Writer& w = next(kMemsets, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.i32_field(3, r.deviceId);
  w.i32_field(4, r.contextId);
  w.i32_field(5, r.streamId);
  w.i64_field(6, r.correlationId);
  w.i64_field(7, r.globalPid);
  w.i32_field(8, r.value);
  w.i64_field(9, r.bytes);
  w.i32_field(10, r.memKind);
  w.i64_field(11, r.graphNodeId);
  w.stop();
}

void BatchBuilder::add(const store::RuntimeCall& r) {
  Writer& w = next(kRuntime, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.bool_field(3, r.eventClass == store::ApiClass::driver);
  w.i64_field(4, r.globalTid);
  w.i64_field(5, r.correlationId);
  w.str_field(6, r.name);
  w.i32_field(7, r.returnValue);
  w.i32_field(8, r.cbid);
  w.stop();
}

void BatchBuilder::add(const store::Sync& r) {
  Writer& w = next(kSyncs, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.i32_field(3, r.deviceId);
  w.i32_field(4, r.contextId);
  w.i32_field(5, r.streamId);
  w.i64_field(6, r.correlationId);
  w.i64_field(7, r.globalPid);
  w.i64_field(8, r.globalTid);
  w.i32_field(9, r.syncType);
  w.i64_field(10, r.eventId);
  w.stop();
}

void BatchBuilder::add(const store::NvtxEvent& r) {
  Writer& w = next(kNvtx, true);
  w.i64_field(1, r.start);
  w.i64_field(2, r.end);
  w.i32_field(3, r.eventType);
  w.i64_field(4, r.rangeId);
  w.str_field(5, r.text);
  w.i32_field(6, r.domainId);
  w.i64_field(7, r.globalTid);
  w.stop();
}

void BatchBuilder::add(const store::Iteration& r) {
  Writer& w = next(kIterations, true);
  w.i64_field(1, r.globalPid);
  w.i64_field(2, r.step);
  w.i64_field(3, r.start);
  w.i64_field(4, r.end);
  w.str_field(5, r.source);
  w.stop();
}

void BatchBuilder::add(const store::MemoryEvent& r) {
  Writer& w = next(kMemory, true);
  w.i64_field(1, r.ts);
  w.i64_field(2, r.globalPid);
  w.i32_field(3, r.deviceId);
  w.i64_field(4, r.address);
  w.i64_field(5, r.bytes);
  w.i64_field(6, r.total_allocated);
  w.i64_field(7, r.total_reserved);
  w.stop();
}

void BatchBuilder::add(const store::ExternalCorrelation& r) {
  Writer& w = next(kExternal, true);
  w.i64_field(1, r.correlationId);
  w.i32_field(2, r.externalKind);
  w.i64_field(3, r.externalId);
  w.stop();
}

void BatchBuilder::add_gpu(const store::GpuInfo& g) {
  Writer& w = next(kGpus, false);
  w.i32_field(1, g.id);
  w.str_field(2, g.name);
  w.optional_str_field(3, g.uuid);
  w.i64_field(4, g.totalMemory);
  w.i32_field(5, g.smCount);
  w.i32_field(6, g.computeMajor);
  w.i32_field(7, g.computeMinor);
  w.stop();
}

EncodedBatch BatchBuilder::take() {
  EncodedBatch out;
  out.capture_id = capture_id_;
  out.sequence = sequence_++;
  out.rows = rows_;
  Writer w;
  w.i64_field(1, capture_id_);
  w.i64_field(2, out.sequence);
  for (int t = 0; t < kTables; ++t) {
    if (tables_[t].count == 0) continue;
    w.field(wire::kList, static_cast<int16_t>(3 + t));  // kernels = 3 ... gpus = 12
    w.list(wire::kStruct, tables_[t].count);
    w.raw(tables_[t].w.bytes());
    tables_[t].w.clear();
    tables_[t].count = 0;
  }
  w.stop();
  out.bytes = w.take();
  rows_ = 0;
  return out;
}

}  // namespace fleetscope::agent_link
