// Rows survive the agent link: store rows encoded by the agent's own codec (batch_builder.h,
// wire.h) are decoded by Thrift's generated code (what the daemon runs) and turned back into
// store rows by the daemon's batch decoder; every field is compared.
#include <gtest/gtest.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "fleetscope/agent_link/batch_builder.h"
#include "fleetscope/agent_link/wire.h"
#include "fleetscope/daemon/batch_decoder.h"

namespace fleetscope::agent_link {
using daemon::row_count;
using daemon::write_batch;
namespace {

// Keeps what it is given, one vector per table (store::RowVectors).
class KeepingSink : public store::RowSink, public store::RowVectors {
 public:
  int64_t add_capture(const store::Capture&) override { return 1; }
  void update_capture(const store::Capture&) override {}
  int64_t add_host(const store::Host&) override { return 1; }
  int64_t add_workflow(const store::Workflow&) override { return 1; }
  void upsert_process(const store::Process&) override {}
  void add_gpu(const store::GpuInfo& g) override { gpus.push_back(g); }
#define KEEP_ROW(Row, plural)       \
  void add(store::Row r) override { \
    push(std::move(r));             \
  }
  FLEETSCOPE_EVENT_ROWS(KEEP_ROW)
#undef KEEP_ROW
  std::vector<store::GpuInfo> gpus;
};

// What the daemon does with the bytes: Thrift's generated reader.
rpc::RecordBatch decoded_by_thrift(const EncodedBatch& batch) {
  using apache::thrift::protocol::TBinaryProtocol;
  using apache::thrift::transport::TMemoryBuffer;
  std::string bytes = batch.bytes;
  auto buffer = std::make_shared<TMemoryBuffer>(reinterpret_cast<uint8_t*>(bytes.data()),
                                                static_cast<uint32_t>(bytes.size()));
  TBinaryProtocol protocol(buffer);
  rpc::RecordBatch back;
  back.read(&protocol);  // throws on a missing required field or a malformed value
  EXPECT_EQ(buffer->available_read(), 0u) << "the whole encoding was consumed";
  return back;
}

TEST(RecordCodec, EveryTableRoundTripsWithOptionalFieldsKeptOrAbsent) {
  BatchBuilder builder(/*capture_id=*/5, /*max_rows=*/100);
  store::Kernel k;
  k.start = 100, k.end = 250, k.deviceId = 1, k.contextId = 3, k.streamId = 7, k.correlationId = 42;
  k.globalPid = store::global_pid(1234);
  k.demangledName = "void gemm<float>(float*)";
  k.gridX = 4, k.gridY = 2, k.gridZ = 1, k.blockX = 128, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 32, k.dynamicSharedMemory = 1024, k.graphId = 9, k.gridId = 424242;
  builder.add(k);
  store::Memcpy m;
  m.start = 300, m.end = 400, m.bytes = 4096, m.copyKind = store::kMemcpyHtoD,
  m.srcKind = store::kMemPinned;
  builder.add(m);
  store::Memset ms;
  ms.start = 500, ms.end = 510, ms.bytes = 64, ms.value = 0;
  builder.add(ms);
  store::RuntimeCall r;
  r.start = 90, r.end = 99, r.eventClass = store::ApiClass::driver,
  r.globalTid = store::global_tid(1234, 5);
  r.name = "cuLaunchKernel", r.correlationId = 42, r.cbid = 307;
  builder.add(r);
  store::Sync s;
  s.start = 600, s.end = 700, s.syncType = store::kSyncStream, s.streamId = 7;
  builder.add(s);
  store::NvtxEvent n;
  n.start = 50, n.text = "ProfilerStep#3";  // no end: a mark
  n.eventType = store::kNvtxMark;
  builder.add(n);
  store::Iteration it;
  it.step = 3, it.start = 50, it.end = 800, it.source = "nvtx";
  builder.add(it);
  store::MemoryEvent me;
  me.ts = 120, me.deviceId = 1, me.bytes = -4096, me.address = 0xdead0000;
  builder.add(me);
  store::ExternalCorrelation e;
  e.correlationId = 42, e.externalKind = 2, e.externalId = 77;
  builder.add(e);
  store::CpuOp op;
  op.start = 60, op.end = 70, op.globalTid = store::global_tid(1234, 5), op.name = "aten::mm";
  op.category = "cpu_op", op.externalId = 77;
  builder.add(op);
  store::DeviceSample sample;
  sample.ts = 130, sample.deviceId = 1, sample.metric = "gpu_util_pct", sample.value = 87.5;
  builder.add(sample);
  store::GpuInfo gpu;
  gpu.id = 1, gpu.name = "H100", gpu.smCount = 132;
  builder.add_gpu(gpu);
  EXPECT_EQ(builder.rows(), 11u);

  auto encoded = builder.take();
  EXPECT_EQ(encoded.rows, 11u);
  auto batch = decoded_by_thrift(encoded);
  EXPECT_EQ(batch.capture_id, 5);
  EXPECT_EQ(batch.sequence, 0);
  EXPECT_EQ(builder.take().sequence, 1);
  EXPECT_EQ(row_count(batch), 11u);
  KeepingSink sink;
  EXPECT_EQ(write_batch(std::move(batch), /*capture_id=*/11, sink), 11u);

  ASSERT_EQ(sink.kernels.size(), 1u);
  const auto& k2 = sink.kernels[0];
  EXPECT_EQ(k2.captureId, 11);  // the daemon's capture, not the batch's
  EXPECT_EQ(k2.start, 100);
  EXPECT_EQ(k2.end, 250);
  EXPECT_EQ(k2.contextId, 3);
  EXPECT_EQ(k2.globalPid, store::global_pid(1234));
  EXPECT_EQ(k2.demangledName, k.demangledName);
  EXPECT_TRUE(k2.shortName.empty());
  EXPECT_EQ(k2.gridX, 4);
  EXPECT_EQ(k2.gridY, 2);
  EXPECT_EQ(k2.blockX, 128);
  EXPECT_EQ(k2.registersPerThread, 32);
  EXPECT_EQ(k2.staticSharedMemory, std::nullopt);
  EXPECT_EQ(k2.dynamicSharedMemory, 1024);
  EXPECT_EQ(k2.graphId, 9);
  EXPECT_EQ(k2.launchType, std::nullopt);
  EXPECT_EQ(k2.gridId, 424242);  // schema 4's column: described once in tables.py
  ASSERT_EQ(sink.memcpys.size(), 1u);
  EXPECT_EQ(sink.memcpys[0].bytes, 4096);
  EXPECT_EQ(sink.memcpys[0].srcKind, store::kMemPinned);
  EXPECT_EQ(sink.memcpys[0].dstKind, std::nullopt);
  ASSERT_EQ(sink.memsets.size(), 1u);
  EXPECT_EQ(sink.memsets[0].value, 0);
  ASSERT_EQ(sink.runtime_calls.size(), 1u);
  EXPECT_EQ(sink.runtime_calls[0].eventClass, store::ApiClass::driver);
  EXPECT_EQ(sink.runtime_calls[0].name, "cuLaunchKernel");
  EXPECT_EQ(sink.runtime_calls[0].cbid, 307);
  EXPECT_EQ(sink.runtime_calls[0].returnValue, std::nullopt);
  ASSERT_EQ(sink.syncs.size(), 1u);
  EXPECT_EQ(sink.syncs[0].streamId, 7);
  EXPECT_EQ(sink.syncs[0].deviceId, std::nullopt);
  ASSERT_EQ(sink.nvtx_events.size(), 1u);
  EXPECT_EQ(sink.nvtx_events[0].end, std::nullopt);
  EXPECT_EQ(sink.nvtx_events[0].text, "ProfilerStep#3");
  ASSERT_EQ(sink.iterations.size(), 1u);
  EXPECT_EQ(sink.iterations[0].source, "nvtx");
  ASSERT_EQ(sink.memory_events.size(), 1u);
  EXPECT_EQ(sink.memory_events[0].bytes, -4096);
  EXPECT_EQ(sink.memory_events[0].address, 0xdead0000);
  ASSERT_EQ(sink.external_correlations.size(), 1u);
  EXPECT_EQ(sink.external_correlations[0].externalId, 77);
  ASSERT_EQ(sink.cpu_ops.size(), 1u);
  EXPECT_EQ(sink.cpu_ops[0].name, "aten::mm");
  EXPECT_EQ(sink.cpu_ops[0].externalId, 77);
  EXPECT_EQ(sink.cpu_ops[0].captureId, 11);
  ASSERT_EQ(sink.device_samples.size(), 1u);
  EXPECT_EQ(sink.device_samples[0].metric, "gpu_util_pct");
  EXPECT_DOUBLE_EQ(sink.device_samples[0].value, 87.5);
  EXPECT_EQ(sink.device_samples[0].captureId, 11);
  ASSERT_EQ(sink.gpus.size(), 1u);
  EXPECT_EQ(sink.gpus[0].captureId, 11);
  EXPECT_EQ(sink.gpus[0].smCount, 132);
}

TEST(RecordCodec, BuilderReportsFullAtItsRowBound) {
  BatchBuilder builder(1, 2);
  store::Kernel k;
  builder.add(k);
  EXPECT_FALSE(builder.full());
  builder.add(k);
  EXPECT_TRUE(builder.full());
  auto batch = decoded_by_thrift(builder.take());
  EXPECT_EQ(batch.kernels.size(), 2u);
  EXPECT_TRUE(builder.empty());
}

TEST(Wire, ReaderRefusesTruncatedAndUnversionedInput) {
  wire::Writer w;
  w.message("awaitOrder", wire::kReply, 7);
  w.i64_field(1, 42);
  w.stop();
  std::string bytes = w.bytes();
  wire::Reader r(bytes);
  std::string name;
  wire::MessageType type;
  int32_t seqid = 0;
  r.message(name, type, seqid);
  EXPECT_EQ(name, "awaitOrder");
  EXPECT_EQ(type, wire::kReply);
  EXPECT_EQ(seqid, 7);
  r.skip(wire::kStruct);
  EXPECT_TRUE(r.done());
  wire::Reader truncated(std::string_view(bytes).substr(0, bytes.size() - 3));
  truncated.message(name, type, seqid);
  EXPECT_THROW(truncated.skip(wire::kStruct), wire::WireError);
  std::string old_style = std::string("\x00\x00\x00\x05", 4) + "hello";
  wire::Reader unversioned(old_style);
  EXPECT_THROW(unversioned.message(name, type, seqid), wire::WireError);
  std::string huge = std::string("\x7f\xff\xff\xff", 4);
  wire::Reader claims(huge);
  EXPECT_THROW(claims.str(), wire::WireError);  // never allocated: the claim exceeds the input
}

}  // namespace
}  // namespace fleetscope::agent_link
