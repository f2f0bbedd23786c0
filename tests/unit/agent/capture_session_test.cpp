// Whole captures through the fake activity source: records in, a committed SQLite file out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cupti_runtime_cbid.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "fleetscope/agent/capture_session.h"
#include "fleetscope/agent/fake_activity_source.h"
#include "fleetscope/agent/sqlite_record_sink.h"
#include "fleetscope/store/reader.h"
#include "record_builders.h"

namespace fleetscope::agent {
namespace {

using namespace fleetscope::agent::testing;
namespace fs = std::filesystem;

class CaptureSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fleetscope-agent-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  SessionOptions options() {
    SessionOptions o;
    o.pid = 4321;
    o.command = "python train.py --epochs 1";
    o.hostname = "gpu-node-7";
    o.gpu_facts = [] {
      store::GpuInfo gpu;
      gpu.id = 1;
      gpu.name = "NVIDIA H100 80GB HBM3";
      gpu.uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef";
      gpu.totalMemory = 85'520'809'984;
      gpu.smCount = 132;
      gpu.computeMajor = 9;
      gpu.computeMinor = 0;
      gpu.clockRate = 1'980'000'000;
      return std::vector<store::GpuInfo>{gpu};
    };
    return o;
  }

  static std::map<std::string, int64_t> counts(const store::Reader& reader) {
    std::map<std::string, int64_t> out;
    for (const auto& c : reader.counts()) out[c.table] = c.rows;
    return out;
  }

  fs::path dir_;
};

TEST_F(CaptureSessionTest, RecordSequenceLandsInTheDatabaseWithExpectedCounts) {
  FakeActivitySource source;
  source.set_api_name(store::ApiClass::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                      "cudaLaunchKernel");
  source.set_dropped_records(17);
  source.set_handling_ns(1234);
  SqliteRecordSink sink(path("trace.db"));
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(1'000)) << session.error();
  EXPECT_TRUE(source.enabled());

  constexpr int kKernels = 250, kCopies = 40;
  for (int i = 0; i < kKernels; ++i) {
    auto k = make_kernel("_Z10add_kernelPfS_i");
    k.correlationId = 1000 + i;
    k.start += i * 100'000ULL;
    k.end += i * 100'000ULL;
    source.push(k);
    source.push(make_api(CUPTI_ACTIVITY_KIND_RUNTIME,
                         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1000 + i));
  }
  for (int i = 0; i < kCopies; ++i) source.push(make_memcpy());
  source.push(make_memset());
  source.push(make_sync(7, 13, 1));
  source.push(make_memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                          CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 100));
  for (uint32_t step = 0; step < 3; ++step) {
    source.push(make_marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 10 + step, 1000 * step + 1, "step",
                            nullptr, 4321, 4330));
    source.push(make_marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 10 + step, 1000 * step + 900, nullptr,
                            nullptr, 4321, 4330));
  }
  CUpti_ActivityExternalCorrelation x{};
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
  x.externalId = 31;
  x.correlationId = 1000;
  source.push(x);
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.start = 10;
  o.end = 5010;
  source.push(o);

  CaptureSummary summary = session.close(9'000'000);
  ASSERT_TRUE(summary.written) << summary.error;
  EXPECT_FALSE(source.enabled());
  EXPECT_EQ(summary.stats.kernels, kKernels);
  EXPECT_EQ(summary.dropped_records, 17);
  EXPECT_EQ(summary.collector_overhead_ns, 5000 + 1234);  // CUPTI OVERHEAD records + handling

  // No temporary files left beside the output.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);

  store::Reader reader((dir_ / "trace.db").string());
  auto c = counts(reader);
  EXPECT_EQ(c["CUPTI_ACTIVITY_KIND_KERNEL"], kKernels);
  EXPECT_EQ(c["CUPTI_ACTIVITY_KIND_RUNTIME"], kKernels);
  EXPECT_EQ(c["CUPTI_ACTIVITY_KIND_MEMCPY"], kCopies);
  EXPECT_EQ(c["CUPTI_ACTIVITY_KIND_MEMSET"], 1);
  EXPECT_EQ(c["CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"], 1);
  EXPECT_EQ(c["NVTX_EVENTS"], 3);
  EXPECT_EQ(c["iterations"], 3);
  EXPECT_EQ(c["memory_events"], 1);

  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 1u);
  const store::Capture& capture = captures[0];
  EXPECT_EQ(capture.kind, store::CaptureKind::standalone);
  EXPECT_EQ(capture.source, "fleetscope-agent");
  EXPECT_EQ(capture.source_path, "python train.py --epochs 1");
  EXPECT_EQ(capture.start_ns, 1'000);
  EXPECT_EQ(capture.end_ns, 9'000'000);
  EXPECT_EQ(capture.dropped_records, 17);
  EXPECT_EQ(capture.collector_overhead_ns, summary.collector_overhead_ns);
  EXPECT_EQ(capture.gpu_vendor, "nvidia");

  auto kernels = reader.kernels();
  ASSERT_EQ(kernels.size(), static_cast<size_t>(kKernels));
  EXPECT_EQ(reader.string(kernels[0].demangledNameId), "add_kernel(float*, float*, int)");
  EXPECT_EQ(reader.string(kernels[0].shortNameId), "add_kernel");
  EXPECT_EQ(kernels[0].captureId, capture.id);
  auto calls = reader.runtime_calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(reader.string(calls[0].nameId), "cudaLaunchKernel");

  auto gpus = reader.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].id, 1);
  EXPECT_EQ(gpus[0].captureId, capture.id);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].smCount, 132);
  EXPECT_EQ(gpus[0].totalMemory, 85'520'809'984);

  auto processes = reader.processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].pid, 4321);
  EXPECT_EQ(processes[0].globalPid, 4321LL << 24);
  EXPECT_EQ(processes[0].command, "python train.py --epochs 1");
  EXPECT_EQ(processes[0].start_ns, 1'000);
  EXPECT_EQ(processes[0].end_ns, 9'000'000);
  ASSERT_TRUE(processes[0].host_id.has_value());
  auto hosts = reader.hosts();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].id, *processes[0].host_id);
  EXPECT_EQ(hosts[0].hostname, "gpu-node-7");

  auto iterations = reader.iterations();
  ASSERT_EQ(iterations.size(), 3u);
  EXPECT_EQ(iterations[2].step, 2);
  EXPECT_EQ(iterations[2].start, 2001);
  EXPECT_EQ(iterations[2].end, 2900);

  auto external = reader.external_correlations();
  ASSERT_EQ(external.size(), 1u);
  EXPECT_EQ(external[0].correlationId, 1000);
  EXPECT_EQ(external[0].externalId, 31);
  EXPECT_EQ(external[0].externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1);
}

TEST_F(CaptureSessionTest, EmptyWindowIsWrittenWithANote) {
  FakeActivitySource source;
  SqliteRecordSink sink(path("empty.db"));
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(5));
  CaptureSummary summary = session.close(10);
  ASSERT_TRUE(summary.written) << summary.error;
  store::Reader reader((dir_ / "empty.db").string());
  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 1u);
  EXPECT_FALSE(captures[0].gpu_vendor.has_value());
  EXPECT_EQ(captures[0].note, "no GPU activity in this trace");
  EXPECT_TRUE(reader.kernels().empty());
}

TEST_F(CaptureSessionTest, SourceThatCannotStartLeavesNoFile) {
  FakeActivitySource source;
  source.fail_enable("CUPTI_ERROR_NOT_INITIALIZED");
  SqliteRecordSink sink(path("never.db"));
  CaptureSession session(source, sink, options());
  EXPECT_FALSE(session.open(1));
  EXPECT_NE(session.error().find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos);
  EXPECT_FALSE(session.close(2).written);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(CaptureSessionTest, AbandonedWindowLeavesAConsistentPartialCapture) {
  FakeActivitySource source;
  {
    SqliteRecordSink sink(path("abandoned.db"));
    CaptureSession session(source, sink, options());
    ASSERT_TRUE(session.open(1));
    for (int i = 0; i < 30; ++i) source.push(make_kernel("k"));
    session.pump();  // committed: survives whatever happens next
    // A reader sees the committed rows while the window is still open, and a partial capture.
    store::Reader live(path("abandoned.db"));
    EXPECT_EQ(live.kernels().size(), 30u);
    EXPECT_EQ(live.captures().at(0).note, std::string(kPartialNote));
    source.push(make_kernel("k"));
  }
  EXPECT_FALSE(source.enabled());
  // Only the final file, no temporary or journal beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  store::Reader reader(path("abandoned.db"));
  EXPECT_GE(reader.kernels().size(), 30u);
  EXPECT_EQ(reader.captures().at(0).note, std::string(kPartialNote));
}

TEST_F(CaptureSessionTest, SignalEndsTheWindowAsPartialWithEverythingHandedOver) {
  FakeActivitySource source;
  SqliteRecordSink sink(path("signal.db"));
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(1));
  for (int i = 0; i < 12; ++i) source.push(make_kernel("k"));
  CaptureSummary summary = session.close_on_signal(50, SIGTERM);
  ASSERT_TRUE(summary.written) << summary.error;
  EXPECT_FALSE(summary.complete);
  store::Reader reader(path("signal.db"));
  EXPECT_EQ(reader.kernels().size(), 12u);
  auto capture = reader.captures().at(0);
  EXPECT_EQ(capture.end_ns, 50);
  EXPECT_EQ(capture.note.value_or("").rfind("partial: the process received SIGTERM", 0), 0u);
}

TEST_F(CaptureSessionTest, IncompleteRecordsAreDroppedAndCountedWithAReason) {
  FakeActivitySource source;
  SqliteRecordSink sink(path("incomplete.db"));
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(1));
  source.push(make_kernel("done"));
  auto running = make_kernel("running");
  running.end = 0;  // still running when the forced flush returned it
  source.push(running);
  auto copy = make_memcpy();
  copy.start = 0;
  source.push(copy);
  CaptureSummary summary = session.close(10);
  ASSERT_TRUE(summary.written);
  EXPECT_EQ(summary.stats.incomplete, 2);
  EXPECT_EQ(summary.dropped_records, 2);
  store::Reader reader(path("incomplete.db"));
  ASSERT_EQ(reader.kernels().size(), 1u);
  EXPECT_TRUE(reader.memcpys().empty());
  auto capture = reader.captures().at(0);
  EXPECT_EQ(capture.dropped_records, 2);
  EXPECT_NE(capture.note.value_or("").find("2 incomplete records dropped"), std::string::npos);
}

TEST_F(CaptureSessionTest, SeveralWindowsOfOneProcessShareOneFile) {
  FakeActivitySource source;
  SqliteRecordSink sink(path("windows.db"));
  for (int window = 1; window <= 3; ++window) {
    CaptureSession session(source, sink, options());
    ASSERT_TRUE(session.open(window * 100));
    for (int i = 0; i < window; ++i) source.push(make_kernel("k"));
    ASSERT_TRUE(session.close(window * 100 + 50).written);
  }
  EXPECT_EQ(sink.destination(), path("windows.db"));
  store::Reader reader(path("windows.db"));
  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 3u);
  EXPECT_EQ(reader.hosts().size(), 1u);
  EXPECT_EQ(reader.processes().size(), 3u);  // a process row per capture (schema 3)
  for (int window = 1; window <= 3; ++window) {
    const auto own = reader.processes(captures[window - 1].id);
    ASSERT_EQ(own.size(), 1u);
    EXPECT_EQ(own[0].captureId, captures[window - 1].id);
    EXPECT_EQ(own[0].end_ns, window * 100 + 50);
    store::EventFilter filter;
    filter.captureId = captures[window - 1].id;
    EXPECT_EQ(reader.kernels(filter).size(), static_cast<size_t>(window));
    EXPECT_EQ(captures[window - 1].start_ns, window * 100);
  }
}

TEST_F(CaptureSessionTest, RuntimeFilterLeavesOutNoiseCallsAndCountsThem) {
  FakeActivitySource source;
  source.set_api_name(store::ApiClass::runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                      "cudaLaunchKernel");
  SqliteRecordSink sink(path("filter.db"));
  CaptureSession session(source, sink, options());  // default list (Kineto's)
  ASSERT_TRUE(session.open(1));
  source.push(
      make_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1));
  source.push(
      make_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 2));
  CaptureSummary summary = session.close(2);
  EXPECT_EQ(summary.stats.filtered, 1);
  EXPECT_EQ(summary.dropped_records, 0);
  store::Reader reader(path("filter.db"));
  auto calls = reader.runtime_calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(reader.string(calls[0].nameId), "cudaLaunchKernel");
}

// A sink whose storage fails after some rows: those rows and every later one count as dropped.
class FailingSink final : public RecordSink {
 public:
  int64_t begin(const WindowStart&) override { return 1; }
  RowSink& rows() override { return rows_; }
  void commit() override {
    if (!rows_.kernels.empty()) throw std::runtime_error("disk full");
  }
  void end(const WindowEnd&) override { throw std::runtime_error("disk full"); }
  void end_partial(const WindowEnd& end) override { last_note = end.capture.note.value_or(""); }
  std::string destination() const override { return "failing.db"; }
  int64_t rows_lost() const override { return static_cast<int64_t>(rows_.kernels.size()); }
  VectorSink rows_;
  std::string last_note;
};

TEST_F(CaptureSessionTest, RowsLostToAWriteErrorCountAsDropped) {
  FakeActivitySource source;
  FailingSink sink;
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(1));
  for (int i = 0; i < 5; ++i) source.push(make_kernel("k"));
  session.pump();  // the commit fails: 5 rows lost
  for (int i = 0; i < 3; ++i) source.push(make_kernel("k"));
  CaptureSummary summary = session.close(2);
  EXPECT_FALSE(summary.written);
  EXPECT_EQ(summary.dropped_records, 8);
  EXPECT_NE(summary.error.find("disk full"), std::string::npos) << summary.error;
  EXPECT_NE(sink.last_note.find("8 records lost to a write error"), std::string::npos)
      << sink.last_note;
}

TEST_F(CaptureSessionTest, UnwritableOutputFailsOpenCleanly) {
  FakeActivitySource source;
  SqliteRecordSink sink((dir_ / "missing-dir" / "x.db").string());
  CaptureSession session(source, sink, options());
  EXPECT_FALSE(session.open(1));
  EXPECT_FALSE(source.enabled());
  EXPECT_NE(session.error().find("missing-dir"), std::string::npos);
}

TEST_F(CaptureSessionTest, ANameTakenByAnotherProcessIsNeverOverwritten) {
  { std::ofstream(path("taken.db")) << "someone else's file"; }
  FakeActivitySource source;
  SqliteRecordSink sink(path("taken.db"));
  CaptureSession session(source, sink, options());
  ASSERT_TRUE(session.open(1));
  ASSERT_TRUE(session.close(2).written);
  EXPECT_EQ(sink.destination(), path("taken-2.db"));
  std::ifstream original(path("taken.db"));
  std::string text;
  std::getline(original, text);
  EXPECT_EQ(text, "someone else's file");
}

}  // namespace
}  // namespace fleetscope::agent
