// Exporter tests over databases built here with store::Writer: every value checked below is one
// this file put in, so each expectation can fail if the exporter maps something wrongly.
#include "fleetscope/export/chrome_trace.h"

#include <gtest/gtest.h>

#include <map>

#include <filesystem>

#include "export_test_support.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::exporter {
namespace {

using nlohmann::json;
using testing::events_of;
using testing::events_where;
using testing::read_json;
using testing::read_text;
using testing::ScratchDir;

constexpr int64_t kBase = 1'700'000'000'000'000'000;  // a realistic CLOCK_REALTIME ns value
constexpr int64_t kPid = 4242, kMainTid = 4242, kLaunchTid = 4250;
const std::string kWeirdName =
    "bad\nname\twith\x01"
    "ctrl \"quoted\" \\ end";

// One capture on GPU 1 with one of everything the exporter writes.
std::string build_sample_db(const ScratchDir& dir, const std::string& name = "sample.db") {
  const std::string path = dir.file(name);
  store::Writer writer(store::Database::create(path));
  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = "test";
  capture.start_ns = kBase;
  capture.end_ns = kBase + 400'000;
  const int64_t capture_id = writer.add_capture(capture);

  store::GpuInfo gpu;
  gpu.id = 1;
  gpu.captureId = capture_id;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.smCount = 132;
  gpu.totalMemory = int64_t{85'000'000'000};
  writer.add_gpu(gpu);

  store::Process process;
  process.globalPid = store::global_pid(kPid);
  process.pid = kPid;
  process.command = "/usr/bin/python3 train.py --epochs 1";
  process.rank = 0;
  process.world_size = 2;
  writer.upsert_process(process);

  store::RuntimeCall launch;
  launch.start = kBase + 1000;
  launch.end = kBase + 6000;
  launch.globalTid = store::global_tid(kPid, kLaunchTid);
  launch.correlationId = 77;
  launch.name = "cudaLaunchKernel";
  launch.cbid = 211;
  launch.captureId = capture_id;
  writer.add(launch);
  store::RuntimeCall copy = launch;
  copy.start = kBase + 7000;
  copy.end = kBase + 9000;
  copy.correlationId = 78;
  copy.name = "cudaMemcpyAsync";
  writer.add(copy);
  store::RuntimeCall sync = launch;
  sync.start = kBase + 9500;
  sync.end = kBase + 9900;
  sync.correlationId = 80;  // no GPU activity carries 80: no flow
  sync.name = "cuStreamSynchronize";
  sync.eventClass = store::ApiClass::driver;
  writer.add(sync);

  store::Kernel kernel;
  kernel.start = kBase + 123'456;
  kernel.end = kBase + 124'457;
  kernel.deviceId = 1;
  kernel.streamId = 13;
  kernel.correlationId = 77;
  kernel.globalPid = store::global_pid(kPid);
  kernel.demangledName = "void gemm_kernel<float>(float*)";
  kernel.gridX = 120, kernel.gridY = 2, kernel.gridZ = 1;
  kernel.blockX = 256, kernel.blockY = 1, kernel.blockZ = 1;
  kernel.registersPerThread = 64;
  kernel.staticSharedMemory = 1024;
  kernel.dynamicSharedMemory = 2048;
  kernel.captureId = capture_id;
  writer.add(kernel);
  store::Kernel odd = kernel;
  odd.start = kBase + 200'000;
  odd.end = kBase + 210'000;
  odd.streamId = 14;
  odd.correlationId.reset();
  odd.demangledName = kWeirdName;
  writer.add(odd);

  store::Memcpy memcpy;
  memcpy.start = kBase + 130'000;
  memcpy.end = kBase + 140'000;
  memcpy.deviceId = 1;
  memcpy.streamId = 13;
  memcpy.correlationId = 78;
  memcpy.bytes = 1 << 20;
  memcpy.copyKind = store::kMemcpyHtoD;
  memcpy.srcKind = store::kMemPinned;
  memcpy.dstKind = store::kMemDevice;
  memcpy.captureId = capture_id;
  writer.add(memcpy);

  store::Memset memset;
  memset.start = kBase + 150'000;
  memset.end = kBase + 151'000;
  memset.deviceId = 1;
  memset.streamId = 13;
  memset.bytes = 4096;
  memset.value = 0;
  memset.memKind = store::kMemDevice;
  memset.captureId = capture_id;
  writer.add(memset);

  store::CpuOp op;
  op.start = kBase;  // the earliest event: the base time
  op.end = kBase + 8000;
  op.globalTid = store::global_tid(kPid, kMainTid);
  op.name = "aten::mm";
  op.externalId = 5;
  op.captureId = capture_id;
  writer.add(op);

  store::Iteration step;
  step.captureId = capture_id;
  step.globalPid = store::global_pid(kPid);
  step.step = 3;
  step.start = kBase + 500;
  step.end = kBase + 300'000;
  writer.add(step);

  for (auto [offset, value] : {std::pair{100'000, 87.5}, std::pair{200'000, 12.25}}) {
    store::DeviceSample sample;
    sample.ts = kBase + offset;
    sample.deviceId = 1;
    sample.metric = "gpu_util_pct";
    sample.value = value;
    sample.captureId = capture_id;
    writer.add(sample);
  }
  for (auto [offset, bytes] :
       {std::pair{10'000, 100}, std::pair{20'000, 50}, std::pair{30'000, -100}}) {
    store::MemoryEvent event;
    event.ts = kBase + offset;
    event.captureId = capture_id;
    event.globalPid = store::global_pid(kPid);
    event.deviceId = 1;
    event.bytes = bytes;
    writer.add(event);
  }

  store::Finding finding;
  finding.captureId = capture_id;
  finding.rule = "launch_bound_small_kernels";
  finding.severity = "high";
  finding.deviceId = 1;
  finding.window_start = kBase + 100'000;
  finding.window_end = kBase + 200'000;
  finding.impact_ns = 50'000;
  finding.evidence_json = R"({"top":[{"kernel":"gemm","count":3}]})";
  finding.recommendation = "Capture the launches in a CUDA graph.";
  writer.add_finding(finding);
  store::Finding global = finding;
  global.rule = "low_gpu_utilization";
  global.severity = "info";
  global.deviceId.reset();
  global.window_start.reset();
  global.window_end.reset();
  global.evidence_json = "not json {";
  writer.add_finding(global);
  writer.finish();
  return path;
}

class ChromeExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = build_sample_db(dir_);
    out_path_ = dir_.file("out.json");
    store::Reader reader(db_path_);
    stats_ = export_chrome(reader, out_path_);
    text_ = read_text(out_path_);
    trace_ = json::parse(text_);
  }

  ScratchDir dir_;
  std::string db_path_, out_path_, text_;
  ChromeExportStats stats_;
  json trace_;
};

TEST_F(ChromeExportTest, BaseTimeIsTheEarliestEventAndRecordedTwice) {
  EXPECT_EQ(stats_.base_time_ns, kBase);
  EXPECT_EQ(trace_.at("baseTimeNanoseconds").get<int64_t>(), kBase);
  EXPECT_EQ(trace_.at("metadata").at("baseTimeNanoseconds").get<int64_t>(), kBase);
  const auto ops = events_of(trace_, "X", "cpu_op");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].at("ts").get<double>(), 0.0);
}

TEST_F(ChromeExportTest, TimestampsAreMicrosecondsWithExactlyThreeDecimals) {
  // kernel at base + 123456 ns lasting 1001 ns; memcpy at +130000 lasting 10000.
  EXPECT_NE(text_.find(R"("ts":123.456,"dur":1.001)"), std::string::npos);
  EXPECT_NE(text_.find(R"("ts":130.000,"dur":10.000)"), std::string::npos);
  EXPECT_NE(text_.find(R"("ts":0.000,"dur":8.000)"), std::string::npos);  // the cpu op
}

TEST_F(ChromeExportTest, EveryRowBecomesOneEvent) {
  EXPECT_EQ(stats_.kernels, 2);
  EXPECT_EQ(stats_.memcpys, 1);
  EXPECT_EQ(stats_.memsets, 1);
  EXPECT_EQ(stats_.runtime_calls, 3);
  EXPECT_EQ(stats_.cpu_ops, 1);
  EXPECT_EQ(stats_.iterations, 1);
  EXPECT_EQ(stats_.device_samples, 2);
  EXPECT_EQ(stats_.memory_events, 3);
  EXPECT_EQ(stats_.findings, 2);
  EXPECT_EQ(stats_.flows, 2);
  EXPECT_EQ(events_of(trace_, "X", "kernel").size(), 2u);
  EXPECT_EQ(events_of(trace_, "X", "gpu_memcpy").size(), 1u);
  EXPECT_EQ(events_of(trace_, "X", "gpu_memset").size(), 1u);
  EXPECT_EQ(events_of(trace_, "X", "cuda_runtime").size(), 2u);
  EXPECT_EQ(events_of(trace_, "X", "cuda_driver").size(), 1u);
  EXPECT_EQ(static_cast<int64_t>(trace_.at("traceEvents").size()), stats_.events);
}

TEST_F(ChromeExportTest, GpuIsAProcessAndStreamsAreThreads) {
  const auto kernels = events_where(trace_, [](const json& e) {
    return e.value("cat", "") == "kernel" && e.at("args").at("stream") == 13;
  });
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("pid"), 1);
  EXPECT_EQ(kernels[0].at("tid"), 13);
  EXPECT_EQ(kernels[0].at("name"), "void gemm_kernel<float>(float*)");

  const auto names = events_where(trace_, [](const json& e) {
    return e.value("ph", "") == "M" && e.value("name", "") == "process_name" && e.at("pid") == 1;
  });
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].at("args").at("name"), "GPU 1: NVIDIA H100 80GB HBM3");
  const auto streams = events_where(trace_, [](const json& e) {
    return e.value("ph", "") == "M" && e.value("name", "") == "thread_name" && e.at("pid") == 1;
  });
  std::set<std::string> stream_names;
  for (const auto& e : streams) stream_names.insert(e.at("args").at("name").get<std::string>());
  EXPECT_EQ(stream_names, (std::set<std::string>{"stream 13", "stream 14"}));
}

TEST_F(ChromeExportTest, HostCallsUseThePidAndTidOfTheirThread) {
  const auto calls = events_of(trace_, "X", "cuda_runtime");
  ASSERT_FALSE(calls.empty());
  for (const auto& call : calls) {
    EXPECT_EQ(call.at("pid"), kPid);
    EXPECT_EQ(call.at("tid"), kLaunchTid);
  }
  const auto ops = events_of(trace_, "X", "cpu_op");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].at("tid"), kMainTid);
  EXPECT_EQ(ops[0].at("args").at("External id"), 5);
  const auto process = events_where(trace_, [](const json& e) {
    return e.value("name", "") == "process_name" && e.at("pid") == kPid;
  });
  ASSERT_EQ(process.size(), 1u);
  EXPECT_EQ(process[0].at("args").at("name"), "python3 (pid 4242)");
  EXPECT_EQ(trace_.at("distributedInfo").at("rank"), 0);
  EXPECT_EQ(trace_.at("distributedInfo").at("world_size"), 2);
}

TEST_F(ChromeExportTest, KernelAndCopyArgsCarryLaunchShapeAndKinds) {
  const auto kernels = events_where(trace_, [](const json& e) {
    return e.value("cat", "") == "kernel" && e.at("args").at("stream") == 13;
  });
  ASSERT_EQ(kernels.size(), 1u);
  const json& args = kernels[0].at("args");
  EXPECT_EQ(args.at("grid"), json::parse("[120,2,1]"));
  EXPECT_EQ(args.at("block"), json::parse("[256,1,1]"));
  EXPECT_EQ(args.at("registers per thread"), 64);
  EXPECT_EQ(args.at("shared memory"), 3072);
  EXPECT_EQ(args.at("correlation"), 77);
  EXPECT_EQ(args.at("device"), 1);

  const auto copies = events_of(trace_, "X", "gpu_memcpy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].at("name"), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(copies[0].at("args").at("bytes"), 1 << 20);
  EXPECT_EQ(copies[0].at("args").at("copy kind"), "Host-to-Device");
  EXPECT_EQ(copies[0].at("args").at("src kind"), "Pinned");
  EXPECT_DOUBLE_EQ(copies[0].at("args").at("memory bandwidth (GB/s)").get<double>(),
                   (1 << 20) / 10'000.0);
  const auto sets = events_of(trace_, "X", "gpu_memset");
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].at("name"), "Memset (Device)");
  EXPECT_EQ(sets[0].at("args").at("bytes"), 4096);
}

TEST_F(ChromeExportTest, FlowsPairLaunchesWithTheirGpuWork) {
  const auto starts = events_of(trace_, "s", "ac2g");
  const auto finishes = events_of(trace_, "f", "ac2g");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(finishes.size(), 2u);
  std::map<int64_t, json> start_by_id, finish_by_id;
  for (const auto& e : starts) start_by_id[e.at("id").get<int64_t>()] = e;
  for (const auto& e : finishes) finish_by_id[e.at("id").get<int64_t>()] = e;
  ASSERT_TRUE(start_by_id.count(77) && finish_by_id.count(77));
  ASSERT_TRUE(start_by_id.count(78) && finish_by_id.count(78));
  EXPECT_FALSE(start_by_id.count(80));  // the sync launched nothing
  // 77: cudaLaunchKernel on the launch thread at +1 us -> kernel on GPU 1 stream 13 at +123.456.
  EXPECT_EQ(start_by_id[77].at("pid"), kPid);
  EXPECT_EQ(start_by_id[77].at("tid"), kLaunchTid);
  EXPECT_DOUBLE_EQ(start_by_id[77].at("ts").get<double>(), 1.0);
  EXPECT_EQ(finish_by_id[77].at("pid"), 1);
  EXPECT_EQ(finish_by_id[77].at("tid"), 13);
  EXPECT_DOUBLE_EQ(finish_by_id[77].at("ts").get<double>(), 123.456);
  EXPECT_EQ(finish_by_id[77].at("bp"), "e");
  EXPECT_DOUBLE_EQ(finish_by_id[78].at("ts").get<double>(), 130.0);
}

TEST_F(ChromeExportTest, NamesWithControlCharactersAreEscaped) {
  EXPECT_NE(text_.find(R"("bad\nname\twith\u0001ctrl \"quoted\" \\ end")"), std::string::npos);
  const auto odd = events_where(trace_, [](const json& e) {
    return e.value("cat", "") == "kernel" && e.at("args").at("stream") == 14;
  });
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd[0].at("name").get<std::string>(), kWeirdName);
  EXPECT_FALSE(odd[0].at("args").contains("correlation"));
}

TEST_F(ChromeExportTest, CountersForSamplesAndAllocatedMemory) {
  const auto samples = events_of(trace_, "C", "device_sample");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].at("name"), "gpu_util_pct");
  EXPECT_EQ(samples[0].at("pid"), 1);
  std::set<double> values;
  for (const auto& s : samples) values.insert(s.at("args").at("gpu_util_pct").get<double>());
  EXPECT_EQ(values, (std::set<double>{87.5, 12.25}));

  // No totals recorded: the counter is the running sum 100, 150, 50 in time order.
  const auto memory = events_of(trace_, "C", "memory");
  ASSERT_EQ(memory.size(), 3u);
  std::vector<int64_t> allocated;
  for (const auto& m : memory) {
    EXPECT_EQ(m.at("pid"), 1);
    allocated.push_back(m.at("args").at("allocated bytes").get<int64_t>());
  }
  EXPECT_EQ(allocated, (std::vector<int64_t>{100, 150, 50}));
  const auto instants =
      events_where(trace_, [](const json& e) { return e.value("name", "") == "[memory]"; });
  ASSERT_EQ(instants.size(), 3u);
  EXPECT_EQ(instants[2].at("args").at("Bytes"), -100);
  EXPECT_FALSE(instants[2].at("args").contains("Total Allocated"));  // not recorded at the source
  EXPECT_EQ(instants[2].at("args").at("Device Id"), 1);
  EXPECT_EQ(instants[2].at("args").at("Device Type"), 1);
}

TEST_F(ChromeExportTest, IterationsAreSpans) {
  const auto steps = events_of(trace_, "X", "iteration");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].at("name"), "Iteration 3");
  EXPECT_EQ(steps[0].at("pid"), kPid);
  EXPECT_DOUBLE_EQ(steps[0].at("ts").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(steps[0].at("dur").get<double>(), 299.5);
  EXPECT_EQ(steps[0].at("args").at("source"), "ProfilerStep");
}

TEST_F(ChromeExportTest, FindingsAreInstantEventsWithTheirArgs) {
  const auto findings = events_of(trace_, "i", "finding");
  ASSERT_EQ(findings.size(), 2u);
  const json& on_gpu =
      findings[0].at("args").at("rule") == "launch_bound_small_kernels" ? findings[0] : findings[1];
  const json& global = &on_gpu == &findings[0] ? findings[1] : findings[0];
  EXPECT_EQ(on_gpu.at("s"), "p");
  EXPECT_EQ(on_gpu.at("pid"), 1);
  EXPECT_DOUBLE_EQ(on_gpu.at("ts").get<double>(), 100.0);
  EXPECT_EQ(on_gpu.at("args").at("severity"), "high");
  EXPECT_EQ(on_gpu.at("args").at("impact_ns"), 50'000);
  EXPECT_EQ(on_gpu.at("args").at("evidence").at("top").at(0).at("count"), 3);
  EXPECT_EQ(on_gpu.at("args").at("recommendation"), "Capture the launches in a CUDA graph.");
  EXPECT_EQ(global.at("s"), "g");
  EXPECT_EQ(global.at("args").at("rule"), "low_gpu_utilization");
  EXPECT_EQ(global.at("args").at("evidence"), "not json {");  // kept as text
}

TEST(ChromeExport, GzipOutputDecompressesToTheSameEvents) {
  ScratchDir dir;
  const std::string db = build_sample_db(dir);
  store::Reader reader(db);
  export_chrome(reader, dir.file("plain.json"));
  const ChromeExportStats stats = export_chrome(reader, dir.file("packed.json.gz"));
  const std::string raw = testing::read_raw_bytes(dir.file("packed.json.gz"));
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b);
  const json plain = read_json(dir.file("plain.json"));
  const json packed = read_json(dir.file("packed.json.gz"));
  EXPECT_EQ(packed.at("traceEvents"), plain.at("traceEvents"));
  EXPECT_EQ(static_cast<int64_t>(packed.at("traceEvents").size()), stats.events);
  // Only the two outputs and the database remain: no temporary files.
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"packed.json.gz", "plain.json", "sample.db"}));
}

TEST(ChromeExport, CaptureOptionSelectsOneCapture) {
  ScratchDir dir;
  const std::string path = dir.file("two.db");
  {
    store::Writer writer(store::Database::create(path));
    for (int c = 0; c < 2; ++c) {
      store::Capture capture;
      capture.source = "test";
      const int64_t id = writer.add_capture(capture);
      for (int k = 0; k <= c; ++k) {  // capture 1: one kernel; capture 2: two kernels
        store::Kernel kernel;
        kernel.start = kBase + 1'000'000 * (c + 1) + k * 1000;
        kernel.end = kernel.start + 500;
        kernel.demangledName = "k" + std::to_string(id);
        kernel.captureId = id;
        writer.add(kernel);
      }
    }
    writer.finish();
  }
  store::Reader reader(path);
  ChromeExportOptions options;
  options.capture_id = 2;
  const ChromeExportStats stats = export_chrome(reader, dir.file("c2.json"), options);
  EXPECT_EQ(stats.kernels, 2);
  EXPECT_EQ(stats.base_time_ns, kBase + 2'000'000);
  const json trace = read_json(dir.file("c2.json"));
  for (const auto& kernel : events_of(trace, "X", "kernel")) EXPECT_EQ(kernel.at("name"), "k2");
  EXPECT_EQ(trace.at("metadata").at("captureId"), 2);

  options.capture_id = 9;
  EXPECT_THROW(export_chrome(reader, dir.file("c9.json"), options), InputError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("c9.json")));
  EXPECT_EQ(dir.entries().size(), 2u);  // two.db and c2.json only

  // Every capture: each in its own process group, not both on one "GPU 0" track.
  options.capture_id.reset();
  const ChromeExportStats all = export_chrome(reader, dir.file("all.json"), options);
  EXPECT_EQ(all.kernels, 3);
  const json both = read_json(dir.file("all.json"));
  std::map<std::string, int64_t> pid_of_name;
  for (const auto& e : both.at("traceEvents"))
    if (e.at("ph") == "M" && e.at("name") == "process_name")
      pid_of_name[e.at("args").at("name").get<std::string>()] = e.at("pid").get<int64_t>();
  ASSERT_TRUE(pid_of_name.count("capture 1: GPU 0")) << both.dump();
  ASSERT_TRUE(pid_of_name.count("capture 2: GPU 0")) << both.dump();
  const int64_t first = pid_of_name["capture 1: GPU 0"], second = pid_of_name["capture 2: GPU 0"];
  EXPECT_NE(first, second);
  for (const auto& kernel : events_of(both, "X", "kernel"))
    EXPECT_EQ(kernel.at("pid").get<int64_t>(), kernel.at("name") == "k1" ? first : second)
        << kernel.dump();
}

// The whole output, byte for byte, of the sample with the rows it lacks added: NVTX ranges and
// marks and a sync of every placement (on a stream, a thread, a device, a process). Recorded as
// size and FNV-1a digest from the exporter before its per-table writers became one generic writer
// (issue 23); export_golden_test.cpp does the same for real traces.
TEST(ChromeExport, EveryTableIsByteForByteAsRecorded) {
  ScratchDir dir;
  const std::string path = build_sample_db(dir);
  {
    store::Writer writer(store::Database::open(path, store::OpenMode::read_write));
    const int64_t capture_id = 1;
    store::Sync on_stream;
    on_stream.start = kBase + 160'000;
    on_stream.end = kBase + 161'000;
    on_stream.deviceId = 1;
    on_stream.streamId = 13;
    on_stream.syncType = store::kSyncStream;
    on_stream.globalTid = store::global_tid(kPid, kLaunchTid);
    on_stream.captureId = capture_id;
    writer.add(on_stream);
    store::Sync on_thread = on_stream;  // an event sync: the waiting thread's track
    on_thread.deviceId.reset();
    on_thread.streamId.reset();
    on_thread.syncType = store::kSyncEvent;
    on_thread.eventId = 5;
    on_thread.eventRecordCorrelationId = 6;
    on_thread.eventRecordStreamId = 9;
    writer.add(on_thread);
    store::Sync on_device = on_stream;  // a context sync: the device's track
    on_device.streamId.reset();
    on_device.globalTid.reset();
    on_device.syncType = store::kSyncContext;
    writer.add(on_device);
    store::Sync on_process = on_device;  // nothing but the process
    on_process.deviceId.reset();
    on_process.globalPid = store::global_pid(kPid);
    writer.add(on_process);
    store::NvtxEvent range;
    range.start = kBase + 600;
    range.end = kBase + 60'000;
    range.text = "forward";
    range.domainId = 0;
    range.globalTid = store::global_tid(kPid, kMainTid);
    range.captureId = capture_id;
    writer.add(range);
    store::NvtxEvent mark = range;  // no end, no thread: an instant of the unattributed process
    mark.end.reset();
    mark.eventType = 34;
    mark.text = "checkpoint \"a\"";
    mark.globalTid.reset();
    writer.add(mark);
    writer.finish();
  }
  store::Reader reader(path);
  const std::string out = dir.file("every-table.json");
  export_chrome(reader, out);
  const std::string bytes = read_text(out);
  EXPECT_EQ(bytes.size(), 6508u);
  EXPECT_EQ(testing::fnv1a_digest(bytes), "b49ed0e4eb2cfd0e")
      << "the export changed; if on purpose, record its size and digest "
      << "(FLEETSCOPE_KEEP_TEST_FILES=1 keeps " << out << " to diff)";
}

TEST(ChromeExport, EmptyDatabaseGivesAValidEmptyTrace) {
  ScratchDir dir;
  const std::string path = dir.file("empty.db");
  store::Writer(store::Database::create(path)).finish();
  store::Reader reader(path);
  const ChromeExportStats stats = export_chrome(reader, dir.file("empty.json"));
  EXPECT_EQ(stats.events, 0);
  const json trace = read_json(dir.file("empty.json"));
  EXPECT_TRUE(trace.at("traceEvents").empty());
  EXPECT_EQ(trace.at("baseTimeNanoseconds"), 0);
}

TEST(FindingEvents, AppendToAJsonArray) {
  store::Finding finding;
  finding.id = 12;
  finding.rule = "gpu_gaps";
  finding.severity = "medium";
  finding.window_start = kBase + 2'500;
  finding.window_end = kBase + 10'000;
  finding.impact_ns = 7'500;
  finding.recommendation = "Overlap data loading with compute.";
  JsonArraySink sink;
  EXPECT_EQ(append_findings_events(sink, {finding, finding}, kBase), 2);
  const std::string text = sink.finish();
  EXPECT_NE(text.find(R"("ts":2.500)"), std::string::npos);
  const json events = json::parse(text);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].at("name"), "medium: gpu_gaps");
  EXPECT_EQ(events[0].at("s"), "g");
  EXPECT_EQ(events[0].at("args").at("evidence"), json::object());
  EXPECT_EQ(events[0].at("args").at("window (us)").get<double>(), 7.5);
}

}  // namespace
}  // namespace fleetscope::exporter
