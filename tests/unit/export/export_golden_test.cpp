// The exporter's whole output, byte for byte: the Chrome trace of real Kineto traces (imported
// here) and of a database with rows of every table the export writes, NVTX ranges and marks and
// every placement of a synchronization included. Each expected output is recorded as its size and
// a 64-bit FNV-1a digest, taken from the exporter before its per-table event writers became one
// generic writer driven by schema/tables.py (issue 23); the refactor had to keep them.
//
// A deliberate change of the output changes them: run with FLEETSCOPE_KEEP_TEST_FILES=1, diff the
// kept outputs against the previous build's, and record the new figures the failure prints.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::exporter {
namespace {

using testing::read_raw_bytes;
using testing::ScratchDir;

std::string digest(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

struct Golden {
  const char* name;  // a trace of tests/data/traces/kineto, or "every-table" (built below)
  size_t bytes;
  const char* fnv1a;
};

constexpr int64_t kBase = 1'700'000'000'000'000'000;
constexpr int64_t kPid = 4242, kTid = 4250;

// One capture with rows of every exported table, including what the real traces lack: NVTX ranges
// and marks, memory events, device samples, and syncs placed on a stream, a thread, a device and
// a process.
std::string build_every_table_db(const ScratchDir& dir) {
  const std::string path = dir.file("every-table.db");
  store::Writer writer(store::Database::create(path));
  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = "test";
  capture.start_ns = kBase;
  capture.end_ns = kBase + 900'000;
  const int64_t capture_id = writer.add_capture(capture);

  store::GpuInfo gpu;
  gpu.id = 0;
  gpu.captureId = capture_id;
  gpu.name = "NVIDIA A100-SXM4-40GB";
  gpu.smCount = 108;
  gpu.maxWarpsPerSm = 64;
  gpu.threadsPerWarp = 32;
  gpu.totalMemory = int64_t{42'000'000'000};
  writer.add_gpu(gpu);

  store::Process process;
  process.globalPid = store::global_pid(kPid);
  process.pid = kPid;
  process.command = "/usr/bin/python3 train.py";
  writer.upsert_process(process);

  store::RuntimeCall launch;
  launch.start = kBase + 1000;
  launch.end = kBase + 4000;
  launch.globalTid = store::global_tid(kPid, kTid);
  launch.correlationId = 7;
  launch.name = "cudaLaunchKernel";
  launch.returnValue = 0;
  launch.captureId = capture_id;
  writer.add(launch);
  store::RuntimeCall driver = launch;
  driver.start = kBase + 5000;
  driver.end = kBase + 5500;
  driver.correlationId = 8;
  driver.name = "cuMemcpyHtoDAsync_v2";
  driver.eventClass = store::ApiClass::driver;
  writer.add(driver);

  store::Kernel kernel;
  kernel.start = kBase + 10'000;
  kernel.end = kBase + 25'001;
  kernel.deviceId = 0;
  kernel.contextId = 1;
  kernel.streamId = 7;
  kernel.correlationId = 7;
  kernel.globalPid = store::global_pid(kPid);
  kernel.demangledName = "void gemm<float, 128>(float const*, float*)";
  kernel.gridX = 80, kernel.gridY = 2, kernel.gridZ = 1;
  kernel.blockX = 128, kernel.blockY = 1, kernel.blockZ = 1;
  kernel.registersPerThread = 96;
  kernel.staticSharedMemory = 512;
  kernel.graphId = 3;
  kernel.launchType = 0;
  kernel.gridId = 11;
  kernel.captureId = capture_id;
  writer.add(kernel);

  store::Memcpy copy;
  copy.start = kBase + 30'000;
  copy.end = kBase + 33'000;
  copy.deviceId = 0;
  copy.streamId = 7;
  copy.correlationId = 8;
  copy.bytes = 3 << 20;
  copy.copyKind = store::kMemcpyHtoD;
  copy.srcKind = store::kMemPinned;
  copy.captureId = capture_id;
  writer.add(copy);

  store::Memset memset;
  memset.start = kBase + 34'000;
  memset.end = kBase + 34'500;
  memset.deviceId = 0;
  memset.streamId = 7;
  memset.bytes = 4096;
  memset.captureId = capture_id;
  writer.add(memset);

  // A stream sync (on the stream's track), an event sync with a waiting thread, a context sync
  // with only a device, and one with only a process.
  store::Sync on_stream;
  on_stream.start = kBase + 40'000;
  on_stream.end = kBase + 41'000;
  on_stream.deviceId = 0;
  on_stream.streamId = 7;
  on_stream.syncType = store::kSyncStream;
  on_stream.globalTid = store::global_tid(kPid, kTid);
  on_stream.captureId = capture_id;
  writer.add(on_stream);
  store::Sync on_thread = on_stream;
  on_thread.deviceId.reset();
  on_thread.streamId.reset();
  on_thread.syncType = store::kSyncEvent;
  on_thread.eventId = 5;
  on_thread.eventRecordCorrelationId = 6;
  on_thread.eventRecordStreamId = 9;
  writer.add(on_thread);
  store::Sync on_device = on_stream;
  on_device.streamId.reset();
  on_device.globalTid.reset();
  on_device.syncType = store::kSyncContext;
  writer.add(on_device);
  store::Sync on_process = on_device;
  on_process.deviceId.reset();
  on_process.globalPid = store::global_pid(kPid);
  writer.add(on_process);

  store::NvtxEvent range;
  range.start = kBase + 500;
  range.end = kBase + 60'000;
  range.text = "forward";
  range.domainId = 0;
  range.globalTid = store::global_tid(kPid, kTid);
  range.captureId = capture_id;
  writer.add(range);
  store::NvtxEvent mark = range;
  mark.end.reset();
  mark.eventType = 34;
  mark.text = "checkpoint \"a\"";
  mark.globalTid.reset();
  writer.add(mark);

  store::CpuOp op;
  op.start = kBase;
  op.end = kBase + 9000;
  op.globalTid = store::global_tid(kPid, kTid);
  op.name = "aten::linear";
  op.externalId = 2;
  op.captureId = capture_id;
  writer.add(op);
  store::CpuOp annotation = op;
  annotation.category = "user_annotation";
  annotation.name = "ProfilerStep#1";
  annotation.externalId.reset();
  writer.add(annotation);

  store::Iteration step;
  step.captureId = capture_id;
  step.globalPid = store::global_pid(kPid);
  step.step = 1;
  step.start = kBase;
  step.end = kBase + 70'000;
  writer.add(step);
  store::Iteration unattributed = step;
  unattributed.globalPid.reset();
  unattributed.step = 2;
  unattributed.start = kBase + 70'000;
  unattributed.end = kBase + 90'000;
  writer.add(unattributed);

  for (auto [offset, value] : {std::pair{20'000, 55.5}, std::pair{80'000, 3.0}}) {
    store::DeviceSample sample;
    sample.ts = kBase + offset;
    sample.deviceId = 0;
    sample.metric = "sm_active_ratio";
    sample.value = value;
    sample.captureId = capture_id;
    writer.add(sample);
  }
  store::MemoryEvent alloc;
  alloc.ts = kBase + 2000;
  alloc.captureId = capture_id;
  alloc.globalPid = store::global_pid(kPid);
  alloc.deviceId = 0;
  alloc.address = 0x7f0000;
  alloc.bytes = 1 << 20;
  alloc.total_allocated = 1 << 20;
  writer.add(alloc);
  store::MemoryEvent host = alloc;
  host.ts = kBase + 3000;
  host.deviceId = -1;
  host.total_allocated.reset();
  host.bytes = 64;
  writer.add(host);

  store::Finding finding;
  finding.captureId = capture_id;
  finding.rule = "launch_bound_small_kernels";
  finding.severity = "medium";
  finding.deviceId = 0;
  finding.window_start = kBase + 10'000;
  finding.window_end = kBase + 40'000;
  finding.impact_ns = 1234;
  finding.evidence_json = R"({"kernels":1})";
  finding.recommendation = "Batch the launches.";
  writer.add_finding(finding);
  writer.finish();
  return path;
}

void PrintTo(const Golden& golden, std::ostream* os) {
  *os << golden.name;
}

class ExportGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(ExportGolden, TheWholeOutputIsByteForByteAsRecorded) {
  const Golden& golden = GetParam();
  ScratchDir dir;
  std::string db;
  if (std::string(golden.name) == "every-table") {
    db = build_every_table_db(dir);
  } else {
    const std::string trace = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + golden.name;
    ASSERT_TRUE(std::filesystem::exists(trace))
        << "reference trace missing: " << trace << " (tests/data/README.md)";
    db = dir.file("imported.db");
    ASSERT_EQ(importers::import_files({trace}, db).size(), 1u);
  }
  store::Reader reader(db);
  ChromeExportOptions options;
  options.gzip = false;
  const std::string out = dir.file("exported.json");
  export_chrome(reader, out, options);
  const std::string bytes = read_raw_bytes(out);
  EXPECT_EQ(bytes.size(), golden.bytes) << golden.name;
  EXPECT_EQ(digest(bytes), golden.fnv1a)
      << golden.name << ": the export changed; if on purpose, record {\"" << golden.name << "\", "
      << bytes.size() << ", \"" << digest(bytes) << "\"} (FLEETSCOPE_KEEP_TEST_FILES=1 "
      << "keeps " << out << " to diff)";
}

INSTANTIATE_TEST_SUITE_P(
    RecordedOutputs, ExportGolden,
    ::testing::Values(
        Golden{"every-table", 5529, "1c7c0cce5c6061b7"},
        Golden{"hta-critical_path_alexnet_trace.json.gz", 207505, "b8e2bcc7e09d75b1"},
        Golden{"hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", 17136,
               "6e17564c7b32f59b"},
        Golden{"hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", 29320,
               "fb293afdce1457b5"},
        Golden{"hta-timeline_analysis_sampled_rank-0.json.gz", 1565493, "60feeefac137e941"}),
    [](const ::testing::TestParamInfo<Golden>& info) {
      std::string name = info.param.name;
      name = name.substr(0, name.find(".json"));
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace fleetscope::exporter
