// Every field that reaches the database, checked against the CUPTI record it came from.
#include <gtest/gtest.h>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "fleetscope/agent/record_translator.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "record_builders.h"
#include "temp_dir.h"

namespace fleetscope::agent {
namespace {

using namespace fleetscope::agent::testing;

class TranslationTest : public ::testing::Test {
 protected:
  TranslationTest() : translator_(context(), sink_) {}
  static TranslationContext context() {
    TranslationContext c;
    c.captureId = 42;
    c.pid = 4321;
    c.api_name = [](store::ApiClass api, uint32_t cbid) -> std::string {
      if (api == store::ApiClass::runtime &&
          cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        return "cudaLaunchKernel";
      if (api == store::ApiClass::driver && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        return "cuLaunchKernel";
      return "";
    };
    return c;
  }
  void feed(const auto& record) {
    translator_.translate(reinterpret_cast<const CUpti_Activity&>(record));
  }
  VectorSink sink_;
  RecordTranslator translator_;
};

TEST_F(TranslationTest, KernelRecordFillsEveryKernelColumn) {
  // _Z10add_kernelPfS_i is add_kernel(float*, float*, int)
  auto r = make_kernel("_Z10add_kernelPfS_i");
  feed(r);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  const store::Kernel& k = sink_.kernels[0];
  EXPECT_EQ(k.start, 1'700'000'000'000'000'100LL);
  EXPECT_EQ(k.end, 1'700'000'000'000'050'100LL);
  EXPECT_EQ(k.deviceId, 1);
  EXPECT_EQ(k.contextId, 7);
  EXPECT_EQ(k.streamId, 13);
  EXPECT_EQ(k.correlationId, 555);
  EXPECT_EQ(k.globalPid, 4321LL << 24);
  EXPECT_EQ(k.demangledName, "add_kernel(float*, float*, int)");
  EXPECT_EQ(k.shortName, "");  // derived by the writer
  EXPECT_EQ(k.gridX, 120);
  EXPECT_EQ(k.gridY, 2);
  EXPECT_EQ(k.gridZ, 3);
  EXPECT_EQ(k.blockX, 256);
  EXPECT_EQ(k.blockY, 4);
  EXPECT_EQ(k.blockZ, 1);
  EXPECT_EQ(k.registersPerThread, 40);
  EXPECT_EQ(k.staticSharedMemory, 2048);
  EXPECT_EQ(k.dynamicSharedMemory, 4096);
  EXPECT_EQ(k.localMemoryPerThread, 24);
  EXPECT_EQ(k.graphId, 77);
  EXPECT_EQ(k.graphNodeId, 9001);
  EXPECT_EQ(k.launchType, 1);
  EXPECT_EQ(k.gridId, 424242);
  EXPECT_FALSE(k.blocksPerSm.has_value());
  EXPECT_FALSE(k.warpsPerSm.has_value());
  EXPECT_FALSE(k.estOccupancy.has_value());
  EXPECT_EQ(k.captureId, 42);
  EXPECT_EQ(translator_.stats().kernels, 1);
}

// A column added in one place (kernel gridId, schema/tables.py) and its translation: a real
// CUpti_ActivityKernel10 becomes a row, the row a SQLite row, and the column reads back.
TEST_F(TranslationTest, KernelColumnsSurviveTheStore) {
  feed(make_kernel("_Z10add_kernelPfS_i"));
  ASSERT_EQ(sink_.kernels.size(), 1u);
  test_support::TempDir dir;
  const std::string path = dir.file("t.db");
  {
    store::Writer writer(store::Database::create(path));
    writer.add(sink_.kernels[0]);
    writer.finish();
  }
  store::Reader reader(path);
  const auto kernels = reader.kernels();
  ASSERT_EQ(kernels.size(), 1u);
  const store::Kernel& k = kernels[0];
  EXPECT_EQ(k.gridId, 424242);
  EXPECT_EQ(k.launchType, 1);
  EXPECT_EQ(k.graphId, 77);
  EXPECT_EQ(k.gridX, 120);
  EXPECT_EQ(k.blockY, 4);
  EXPECT_EQ(k.localMemoryPerThread, 24);
  EXPECT_EQ(k.captureId, 42);
  EXPECT_EQ(reader.string(k.demangledNameId), "add_kernel(float*, float*, int)");
  EXPECT_EQ(reader.string(k.shortNameId), "add_kernel");
  const auto rows = reader.query("SELECT gridId FROM CUPTI_ACTIVITY_KIND_KERNEL");
  ASSERT_EQ(rows.rows.size(), 1u);
  EXPECT_EQ(rows.rows[0][0], "424242");  // the nsys-named column, for users' SQL
}

TEST_F(TranslationTest, KernelOutsideGraphHasNoGraphIds) {
  auto r = make_kernel("plain_c_kernel");
  r.graphId = 0;
  r.graphNodeId = 0;
  r.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  feed(r);
  ASSERT_EQ(sink_.kernels.size(), 1u);
  EXPECT_FALSE(sink_.kernels[0].graphId.has_value());
  EXPECT_FALSE(sink_.kernels[0].graphNodeId.has_value());
  EXPECT_EQ(sink_.kernels[0].demangledName, "plain_c_kernel");  // not mangled: kept as is
}

TEST_F(TranslationTest, MemcpyRecordFillsEveryMemcpyColumn) {
  feed(make_memcpy());
  ASSERT_EQ(sink_.memcpys.size(), 1u);
  const store::Memcpy& m = sink_.memcpys[0];
  EXPECT_EQ(m.start, 2'000'000'000'000'000'000LL);
  EXPECT_EQ(m.end, 2'000'000'000'000'090'000LL);
  EXPECT_EQ(m.deviceId, 0);
  EXPECT_EQ(m.contextId, 3);
  EXPECT_EQ(m.streamId, 14);
  EXPECT_EQ(m.correlationId, 601);
  EXPECT_EQ(m.globalPid, 4321LL << 24);
  EXPECT_EQ(m.bytes, 1 << 20);
  EXPECT_EQ(m.copyKind, store::kMemcpyHtoD);
  EXPECT_EQ(m.srcKind, store::kMemPageable);
  EXPECT_EQ(m.dstKind, store::kMemDevice);
  EXPECT_FALSE(m.srcDeviceId.has_value());
  EXPECT_FALSE(m.dstDeviceId.has_value());
  EXPECT_FALSE(m.graphNodeId.has_value());
  EXPECT_EQ(m.captureId, 42);
}

TEST_F(TranslationTest, PeerCopyKeepsSourceAndDestinationDevices) {
  CUpti_ActivityMemcpyPtoP4 r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  r.bytes = 4096;
  r.start = 100;
  r.end = 300;
  r.deviceId = 0;
  r.contextId = 1;
  r.streamId = 2;
  r.srcDeviceId = 0;
  r.dstDeviceId = 3;
  r.correlationId = 9;
  r.graphNodeId = 5;
  feed(r);
  ASSERT_EQ(sink_.memcpys.size(), 1u);
  const store::Memcpy& m = sink_.memcpys[0];
  EXPECT_EQ(m.copyKind, store::kMemcpyPtoP);
  EXPECT_EQ(m.srcKind, store::kMemDevice);
  EXPECT_EQ(m.dstKind, store::kMemDevice);
  EXPECT_EQ(m.srcDeviceId, 0);
  EXPECT_EQ(m.dstDeviceId, 3);
  EXPECT_EQ(m.bytes, 4096);
  EXPECT_EQ(m.start, 100);
  EXPECT_EQ(m.end, 300);
  EXPECT_EQ(m.contextId, 1);
  EXPECT_EQ(m.streamId, 2);
  EXPECT_EQ(m.correlationId, 9);
  EXPECT_EQ(m.graphNodeId, 5);
  EXPECT_EQ(m.globalPid, 4321LL << 24);
  EXPECT_EQ(m.captureId, 42);
}

TEST_F(TranslationTest, MemsetRecordFillsEveryMemsetColumn) {
  feed(make_memset());
  ASSERT_EQ(sink_.memsets.size(), 1u);
  const store::Memset& m = sink_.memsets[0];
  EXPECT_EQ(m.start, 3'000'000'000'000'000'000LL);
  EXPECT_EQ(m.end, 3'000'000'000'000'004'000LL);
  EXPECT_EQ(m.deviceId, 2);
  EXPECT_EQ(m.contextId, 5);
  EXPECT_EQ(m.streamId, 15);
  EXPECT_EQ(m.correlationId, 602);
  EXPECT_EQ(m.globalPid, 4321LL << 24);
  EXPECT_EQ(m.value, 0xAB);
  EXPECT_EQ(m.bytes, 65536);
  EXPECT_EQ(m.memKind, store::kMemDevice);
  EXPECT_EQ(m.graphNodeId, 4242);
  EXPECT_EQ(m.captureId, 42);
}

TEST_F(TranslationTest, RuntimeAndDriverCallsKeepClassNameThreadAndResult) {
  feed(make_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 555));
  feed(make_api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 556));
  feed(make_api(CUPTI_ACTIVITY_KIND_RUNTIME, 99999, 557));
  ASSERT_EQ(sink_.runtime_calls.size(), 3u);
  const store::RuntimeCall& rt = sink_.runtime_calls[0];
  EXPECT_EQ(rt.start, 4'000'000'000'000'000'000LL);
  EXPECT_EQ(rt.end, 4'000'000'000'000'007'500LL);
  EXPECT_EQ(rt.eventClass, store::ApiClass::runtime);
  EXPECT_EQ(rt.globalTid, (4321LL << 24) | 4330);
  EXPECT_EQ(rt.correlationId, 555);
  EXPECT_EQ(rt.name, "cudaLaunchKernel");
  EXPECT_EQ(rt.returnValue, 2);
  EXPECT_EQ(rt.cbid, static_cast<int32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_EQ(rt.captureId, 42);
  EXPECT_EQ(sink_.runtime_calls[1].eventClass, store::ApiClass::driver);
  EXPECT_EQ(sink_.runtime_calls[1].name, "cuLaunchKernel");
  EXPECT_EQ(sink_.runtime_calls[1].cbid,
            static_cast<int32_t>(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_EQ(sink_.runtime_calls[2].name, "cbid:99999");  // unknown names stay identifiable
}

TEST_F(TranslationTest, SyncRecordResolvesDeviceFromContextAndDropsInvalidFields) {
  feed(make_kernel("k"));  // context 7 lives on device 1
  feed(make_sync(7, 13, 21));
  feed(make_sync(9, CUPTI_SYNCHRONIZATION_INVALID_VALUE, CUPTI_SYNCHRONIZATION_INVALID_VALUE));
  ASSERT_EQ(sink_.syncs.size(), 2u);
  const store::Sync& s = sink_.syncs[0];
  EXPECT_EQ(s.start, 5'000'000'000'000'000'000LL);
  EXPECT_EQ(s.end, 5'000'000'000'000'100'000LL);
  EXPECT_EQ(s.deviceId, 1);
  EXPECT_EQ(s.contextId, 7);
  EXPECT_EQ(s.streamId, 13);
  EXPECT_EQ(s.correlationId, 700);
  EXPECT_EQ(s.globalPid, 4321LL << 24);
  EXPECT_FALSE(s.globalTid.has_value());
  EXPECT_EQ(s.syncType, store::kSyncStream);
  EXPECT_EQ(s.eventId, 21);
  EXPECT_EQ(s.captureId, 42);
  const store::Sync& context_sync = sink_.syncs[1];
  EXPECT_FALSE(context_sync.deviceId.has_value());  // context 9 never seen
  EXPECT_EQ(context_sync.contextId, 9);
  EXPECT_FALSE(context_sync.streamId.has_value());
  EXPECT_FALSE(context_sync.eventId.has_value());
}

// The critical path's cross-stream edges need the cudaEventRecord a wait is on: CUPTI's
// CUDA_EVENT records name it, by cudaEventSyncId when CUPTI fills it, else (as Kineto) the latest
// recording of the (context, event).
TEST_F(TranslationTest, EventWaitsNameTheRecordingTheyWaitOn) {
  feed(make_kernel("k"));                    // context 7 on device 1
  feed(make_cuda_event(21, 13, 900, 5001));  // event 21 recorded on stream 13 by call 900
  feed(make_cuda_event(21, 17, 950, 5002));  // re-recorded on stream 17 by call 950
  feed(make_cuda_event(22, 19, 960, 0));     // no sync id: matched by (context, event)
  CUpti_ActivitySynchronization2 on_first = make_sync(7, 14, 21);
  on_first.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  on_first.cudaEventSyncId = 5001;  // waits on the first recording, not the latest
  feed(on_first);
  CUpti_ActivitySynchronization2 host_wait = make_sync(7, CUPTI_SYNCHRONIZATION_INVALID_VALUE, 22);
  host_wait.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  host_wait.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  feed(host_wait);
  CUpti_ActivitySynchronization2 latest = make_sync(7, 15, 21);
  latest.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  latest.cudaEventSyncId = 0;  // not filled in: the latest recording of event 21
  feed(latest);
  CUpti_ActivitySynchronization2 unknown = make_sync(7, 14, 23);  // event 23 never recorded
  unknown.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
  feed(unknown);
  feed(make_sync(7, 13, 21));  // a Stream Sync waits on no recording
  ASSERT_EQ(sink_.syncs.size(), 5u);
  EXPECT_EQ(sink_.syncs[0].eventRecordCorrelationId, 900);
  EXPECT_EQ(sink_.syncs[0].eventRecordStreamId, 13);
  EXPECT_EQ(sink_.syncs[0].streamId, 14);
  EXPECT_EQ(sink_.syncs[1].eventRecordCorrelationId, 960);
  EXPECT_EQ(sink_.syncs[1].eventRecordStreamId, 19);
  EXPECT_FALSE(sink_.syncs[1].streamId.has_value());
  EXPECT_EQ(sink_.syncs[2].eventRecordCorrelationId, 950);
  EXPECT_EQ(sink_.syncs[2].eventRecordStreamId, 17);
  EXPECT_FALSE(sink_.syncs[3].eventRecordCorrelationId.has_value());
  EXPECT_FALSE(sink_.syncs[3].eventRecordStreamId.has_value());
  EXPECT_FALSE(sink_.syncs[4].eventRecordCorrelationId.has_value());
  EXPECT_EQ(translator_.stats().cuda_events, 3);
  EXPECT_EQ(translator_.stats().ignored, 0);
}

TEST_F(TranslationTest, ContextRecordTeachesDeviceOfContext) {
  CUpti_ActivityContext3 c;
  std::memset(&c, 0, sizeof c);
  c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  c.contextId = 11;
  c.deviceId = 6;
  feed(c);
  feed(make_sync(11, 1, 2));
  ASSERT_EQ(sink_.syncs.size(), 1u);
  EXPECT_EQ(sink_.syncs[0].deviceId, 6);
}

TEST_F(TranslationTest, MarkerPairsBecomeRangesAndStepsBecomeIterations) {
  const uint32_t start = CUPTI_ACTIVITY_FLAG_MARKER_START, end = CUPTI_ACTIVITY_FLAG_MARKER_END;
  feed(make_marker(start, 1, 1000, "ProfilerStep#7", nullptr, 4321, 4330));
  feed(make_marker(start, 2, 1100, "forward", "torch", 4321, 4330));
  feed(make_marker(end, 2, 1900, nullptr, nullptr, 4321, 4330));
  feed(make_marker(end, 1, 2000, nullptr, nullptr, 4321, 4330));
  feed(make_marker(start, 3, 3000, "step", nullptr, 4321, 4330));
  feed(make_marker(end, 3, 3500, nullptr, nullptr, 4321, 4331));  // ended on another thread
  feed(make_marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 4, 3600, "checkpoint", "torch", 4321,
                   4330));
  ASSERT_EQ(sink_.nvtx_events.size(), 4u);
  const store::NvtxEvent& forward = sink_.nvtx_events[0];
  EXPECT_EQ(forward.text, "forward");
  EXPECT_EQ(forward.start, 1100);
  EXPECT_EQ(forward.end, 1900);
  EXPECT_EQ(forward.eventType, store::kNvtxPushPopRange);
  EXPECT_FALSE(forward.rangeId.has_value());
  EXPECT_EQ(forward.domainId, 1);  // first named domain
  EXPECT_EQ(forward.globalTid, (4321LL << 24) | 4330);
  EXPECT_EQ(forward.captureId, 42);
  const store::NvtxEvent& profiler_step = sink_.nvtx_events[1];
  EXPECT_EQ(profiler_step.text, "ProfilerStep#7");
  EXPECT_EQ(profiler_step.start, 1000);
  EXPECT_EQ(profiler_step.end, 2000);
  EXPECT_EQ(profiler_step.domainId, 0);  // default domain
  const store::NvtxEvent& cross_thread = sink_.nvtx_events[2];
  EXPECT_EQ(cross_thread.eventType, store::kNvtxStartEndRange);
  EXPECT_EQ(cross_thread.rangeId, 3);
  const store::NvtxEvent& mark = sink_.nvtx_events[3];
  EXPECT_EQ(mark.eventType, store::kNvtxMark);
  EXPECT_EQ(mark.start, 3600);
  EXPECT_FALSE(mark.end.has_value());
  EXPECT_EQ(mark.text, "checkpoint");
  EXPECT_EQ(mark.domainId, 1);

  ASSERT_EQ(sink_.iterations.size(), 2u);
  EXPECT_EQ(sink_.iterations[0].step, 7);
  EXPECT_EQ(sink_.iterations[0].start, 1000);
  EXPECT_EQ(sink_.iterations[0].end, 2000);
  EXPECT_EQ(sink_.iterations[0].source, "ProfilerStep");
  EXPECT_EQ(sink_.iterations[0].globalPid, 4321LL << 24);
  EXPECT_EQ(sink_.iterations[0].captureId, 42);
  EXPECT_EQ(sink_.iterations[1].step, 0);  // plain "step" ranges are numbered in order
  EXPECT_EQ(sink_.iterations[1].source, "nvtx");
  EXPECT_EQ(sink_.iterations[1].start, 3000);
  EXPECT_EQ(sink_.iterations[1].end, 3500);
}

TEST_F(TranslationTest, UnmatchedMarkersAreCountedNotStored) {
  feed(make_marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 50, 10, nullptr, nullptr, 1, 1));
  feed(make_marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 51, 20, "open", nullptr, 1, 1));
  translator_.finish();
  EXPECT_TRUE(sink_.nvtx_events.empty());
  EXPECT_EQ(translator_.stats().unmatched_markers, 2);
}

// An iteration window closes as soon as the agent hears of its last step's pop; CUPTI may record
// that range's END marker only after the pop's callbacks returned, when the window has already
// disabled the MARKER kind. The step the window closed at is ended where the agent saw it end.
TEST_F(TranslationTest, StepTheWindowClosedAtEndsWhereTheAgentSawItEnd) {
  const uint32_t start = CUPTI_ACTIVITY_FLAG_MARKER_START, end = CUPTI_ACTIVITY_FLAG_MARKER_END;
  feed(make_marker(start, 1, 1000, "step", nullptr, 4321, 4330));
  feed(make_marker(end, 1, 1900, nullptr, nullptr, 4321, 4330));
  feed(make_marker(start, 2, 2000, "step", nullptr, 4321, 4330));     // its END never recorded
  feed(make_marker(start, 3, 2100, "forward", nullptr, 4321, 4330));  // not a step
  feed(make_marker(start, 4, 1950, "step", nullptr, 4321, 4399));     // another thread's step
  translator_.finish(ObservedStepEnd{2950, 4330});

  ASSERT_EQ(sink_.iterations.size(), 2u);
  EXPECT_EQ(sink_.iterations[1].step, 1);
  EXPECT_EQ(sink_.iterations[1].start, 2000);
  EXPECT_EQ(sink_.iterations[1].end, 2950);
  EXPECT_EQ(sink_.iterations[1].captureId, 42);
  ASSERT_EQ(sink_.nvtx_events.size(), 2u);
  const store::NvtxEvent& last = sink_.nvtx_events[1];
  EXPECT_EQ(last.text, "step");
  EXPECT_EQ(last.start, 2000);
  EXPECT_EQ(last.end, 2950);
  EXPECT_EQ(last.eventType, store::kNvtxPushPopRange);
  EXPECT_EQ(last.globalTid, (4321LL << 24) | 4330);
  // The non-step range and the other thread's step stay unmatched.
  EXPECT_EQ(translator_.stats().unmatched_markers, 2);
}

TEST_F(TranslationTest, ClosingStepWhoseEndWasRecordedIsNotEndedTwice) {
  const uint32_t start = CUPTI_ACTIVITY_FLAG_MARKER_START, end = CUPTI_ACTIVITY_FLAG_MARKER_END;
  feed(make_marker(start, 1, 1000, "step", nullptr, 4321, 4330));
  feed(make_marker(end, 1, 1905, nullptr, nullptr, 4321, 4330));
  // A step that began after the pop the agent saw is not the one that ended there.
  feed(make_marker(start, 2, 1950, "step", nullptr, 4321, 4330));
  translator_.finish(ObservedStepEnd{1900, 4330});
  ASSERT_EQ(sink_.iterations.size(), 1u);
  EXPECT_EQ(sink_.iterations[0].end, 1905);  // CUPTI's own END wins
  EXPECT_EQ(translator_.stats().unmatched_markers, 1);
}

TEST_F(TranslationTest, MemoryRecordsBecomeSignedMemoryEvents) {
  feed(make_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                   CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 6000));
  feed(make_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                   7000));
  feed(make_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                   CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 8000));
  ASSERT_EQ(sink_.memory_events.size(), 3u);
  const store::MemoryEvent& alloc = sink_.memory_events[0];
  EXPECT_EQ(alloc.ts, 6000);
  EXPECT_EQ(alloc.captureId, 42);
  EXPECT_EQ(alloc.globalPid, 4321LL << 24);
  EXPECT_EQ(alloc.deviceId, 1);
  EXPECT_EQ(alloc.address, 0x7f0000001000LL);
  EXPECT_EQ(alloc.bytes, 268435456);
  EXPECT_FALSE(alloc.total_allocated.has_value());
  EXPECT_FALSE(alloc.total_reserved.has_value());
  EXPECT_EQ(sink_.memory_events[1].bytes, -268435456);
  EXPECT_EQ(sink_.memory_events[1].ts, 7000);
  EXPECT_EQ(sink_.memory_events[2].deviceId, -1);  // pinned host memory
}

TEST_F(TranslationTest, ExternalCorrelationAndOverheadAreKept) {
  CUpti_ActivityExternalCorrelation x;
  std::memset(&x, 0, sizeof x);
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  x.externalId = 123456789012ULL;
  x.correlationId = 555;
  feed(x);
  ASSERT_EQ(sink_.external_correlations.size(), 1u);
  EXPECT_EQ(sink_.external_correlations[0].captureId, 42);
  EXPECT_EQ(sink_.external_correlations[0].correlationId, 555);
  EXPECT_EQ(sink_.external_correlations[0].externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  EXPECT_EQ(sink_.external_correlations[0].externalId, 123456789012LL);

  CUpti_ActivityOverhead3 o;
  std::memset(&o, 0, sizeof o);
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.start = 1000;
  o.end = 1750;
  feed(o);
  o.start = 5000;
  o.end = 5250;
  feed(o);
  EXPECT_EQ(translator_.stats().overhead_ns, 1000);
  EXPECT_EQ(translator_.stats().overhead_records, 2);
}

TEST(PlainApiName, DropsCuptiVersionSuffixOnly) {
  EXPECT_EQ(RecordTranslator::plain_api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(RecordTranslator::plain_api_name("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(RecordTranslator::plain_api_name("cudaLaunchKernel_ptsz_v7000"),
            "cudaLaunchKernel_ptsz");
  EXPECT_EQ(RecordTranslator::plain_api_name("cuCtxSynchronize"), "cuCtxSynchronize");
  EXPECT_EQ(RecordTranslator::plain_api_name("cudaGraph_vX"), "cudaGraph_vX");
  EXPECT_EQ(RecordTranslator::plain_api_name("odd_v"), "odd_v");
}

TEST_F(TranslationTest, UnstoredKindsAreCountedAsIgnored) {
  CUpti_Activity other{CUPTI_ACTIVITY_KIND_PCIE};
  translator_.translate(other);
  EXPECT_EQ(translator_.stats().ignored, 1);
  EXPECT_EQ(translator_.stats().records, 1);
}

TEST_F(TranslationTest, SpanCoversGpuAndApiActivity) {
  feed(make_kernel("k"));
  feed(make_memcpy());
  const auto& stats = translator_.stats();
  EXPECT_EQ(stats.first_ns, 1'700'000'000'000'000'100LL);
  EXPECT_EQ(stats.last_ns, 2'000'000'000'000'090'000LL);
}

}  // namespace
}  // namespace fleetscope::agent
