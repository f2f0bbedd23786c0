// Unit tests of the Kineto importer's three stages and of format detection.
#include <gtest/gtest.h>

#include "fleetscope/importers/importers.h"
#include "importer_test_util.h"
#include "kineto_parser.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::test {
namespace {

using namespace kineto;

TEST(KinetoTokenizer, MicrosTextToNsIsExact) {
  EXPECT_EQ(micros_text_to_ns("1712195495519689.123"), 1712195495519689123LL);
  EXPECT_EQ(micros_text_to_ns("1712195495519689.0"), 1712195495519689000LL);
  EXPECT_EQ(micros_text_to_ns("1621401187223197"), 1621401187223197000LL);
  EXPECT_EQ(micros_text_to_ns("63.813"), 63813);
  EXPECT_EQ(micros_text_to_ns("1.28"), 1280);
  EXPECT_EQ(micros_text_to_ns("0.0004"), 0);
  EXPECT_EQ(micros_text_to_ns("0.0005"), 1);
  EXPECT_EQ(micros_text_to_ns("2.5e3"), 2500000);
  EXPECT_EQ(micros_text_to_ns("-3.5"), -3500);
  EXPECT_EQ(micros_text_to_ns("12 "), 12000);
  EXPECT_FALSE(micros_text_to_ns("abc").has_value());
  EXPECT_FALSE(micros_text_to_ns("99999999999999999999").has_value());
}

TEST(KinetoParser, MemcpyNames) {
  auto m = parse_memcpy_name("Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(m.copyKind, store::kMemcpyHtoD);
  EXPECT_EQ(m.srcKind, store::kMemPageable);
  EXPECT_EQ(m.dstKind, store::kMemDevice);
  m = parse_memcpy_name("Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(m.copyKind, store::kMemcpyDtoH);
  EXPECT_EQ(m.dstKind, store::kMemPinned);
  m = parse_memcpy_name("Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(m.copyKind, store::kMemcpyDtoD);
  m = parse_memcpy_name("Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(m.copyKind, store::kMemcpyPtoP);
  m = parse_memcpy_name("Memcpy HtoD (Host -> Device)");  // ROCm: pageable/pinned not said
  EXPECT_EQ(m.copyKind, store::kMemcpyHtoD);
  EXPECT_FALSE(m.srcKind.has_value());
  EXPECT_EQ(m.dstKind, store::kMemDevice);
  EXPECT_EQ(parse_memset_kind("Memset (Device)"), store::kMemDevice);
  EXPECT_EQ(parse_memset_kind("Memset (Managed)"), store::kMemManaged);
}

TEST(KinetoParser, SyncKindsAndSteps) {
  EXPECT_EQ(parse_sync_kind("Event Sync"), store::kSyncEvent);
  EXPECT_EQ(parse_sync_kind("Stream Wait Event"), store::kSyncStreamWaitEvent);
  EXPECT_EQ(parse_sync_kind("Stream Sync"), store::kSyncStream);
  EXPECT_EQ(parse_sync_kind("Context Sync"), store::kSyncContext);
  EXPECT_EQ(parse_sync_kind("something"), store::kSyncUnknown);
  EXPECT_EQ(profiler_step("ProfilerStep#551"), 551);
  EXPECT_FALSE(profiler_step("ProfilerStep#").has_value());
  EXPECT_FALSE(profiler_step("Optimizer.step#SGD.step").has_value());
}

TEST(KinetoParser, ClassifiesEveryCategorySpelling) {
  RawEvent ev;
  ev.ph = "X";
  const char* cat = nullptr;
  for (auto [c, k] :
       std::vector<std::pair<const char*, EventKind>>{{"kernel", EventKind::kernel},
                                                      {"Kernel", EventKind::kernel},
                                                      {"gpu_memcpy", EventKind::memcpy},
                                                      {"Memcpy", EventKind::memcpy},
                                                      {"gpu_memset", EventKind::memset},
                                                      {"Memset", EventKind::memset},
                                                      {"cuda_runtime", EventKind::runtime},
                                                      {"Runtime", EventKind::runtime},
                                                      {"cuda_driver", EventKind::driver},
                                                      {"cuda_sync", EventKind::sync},
                                                      {"cpu_op", EventKind::cpu_op},
                                                      {"Operator", EventKind::cpu_op},
                                                      {"user_annotation", EventKind::cpu_op},
                                                      {"gpu_user_annotation", EventKind::cpu_op},
                                                      {"python_function", EventKind::cpu_op},
                                                      {"Trace", EventKind::ignored},
                                                      {"ac2g", EventKind::ignored}}) {
    ev.cat = c;
    EXPECT_EQ(classify(ev, &cat), k) << c;
  }
  ev.cat = "Operator";
  classify(ev, &cat);
  EXPECT_STREQ(cat, "cpu_op");
  ev.ph = "i";
  ev.name = "[memory]";
  EXPECT_EQ(classify(ev), EventKind::memory);
  ev.ph = "s";
  EXPECT_EQ(classify(ev), EventKind::ignored);
}

// A synthetic trace with every kind: relative timestamps (baseTimeNanoseconds written after the
// events, as Kineto does), string tids, memory events, launch → kernel correlation.
const char* kSynthetic = R"JSON({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85000000000,
     "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
     "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerMultiprocessor": 233472, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
  "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "void k<float>(float*)", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2.25,
     "args": {"device": 0, "context": 1, "stream": 7, "correlation": 42, "registers per thread": 32,
              "shared memory": 1024, "blocks per SM": 0.5, "warps per SM": 4.0, "grid": [66, 1, 1],
              "block": [256, 2, 1], "est. achieved occupancy %": 25}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": "200", "ts": 9, "dur": 1,
     "args": {"correlation": 42, "cbid": 211, "External id": 5}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 100, "tid": "worker", "ts": 9.5, "dur": 0.5,
     "args": {"correlation": 43}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 200, "ts": 8, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
     "pid": 100, "tid": 200, "ts": 8.1, "dur": 0.4, "args": {"External id": 4}},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 100, "tid": 200, "ts": 8.0, "dur": 9},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 0, "tid": 7, "ts": 14, "dur": 1,
     "args": {"device": 0, "stream": -1, "correlation": 42, "cuda_sync_kind": "Event Sync", "wait_on_cuda_event_id": 3}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 15, "dur": 1,
     "args": {"device": 0, "stream": 7, "bytes": 64}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 200, "ts": 9.0,
     "args": {"Device Type": 1, "Device Id": 0, "Addr": 140000, "Bytes": 4096, "Total Allocated": 8192,
              "Total Reserved": 2097152}},
    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 100, "tid": 200, "ts": 9.1,
     "args": {"Device Type": 0, "Device Id": -1, "Addr": 1, "Bytes": -16}},
    {"ph": "s", "id": 42, "pid": 100, "tid": 200, "ts": 9, "cat": "ac2g", "name": "ac2g"},
    {"name": "process_name", "ph": "M", "ts": 8, "pid": 100, "tid": 0, "args": {"name": "python3 train.py"}}
  ],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1700000000000000000
})JSON";

TEST(KinetoImporter, SyntheticTraceEveryKind) {
  ScratchDir dir;
  const std::string in = dir.write("synthetic.json", kSynthetic);
  auto results = import_files({in}, dir.file("out.db"));
  const ImportResult& r = results.at(0);
  EXPECT_EQ(r.kernels, 1);
  EXPECT_EQ(r.runtime_calls, 2);
  EXPECT_EQ(r.cpu_ops, 3);
  EXPECT_EQ(r.syncs, 1);
  EXPECT_EQ(r.memsets, 1);
  EXPECT_EQ(r.memory_events, 2);
  EXPECT_EQ(r.iterations, 1);
  EXPECT_EQ(r.gpu_vendor, "nvidia");
  constexpr int64_t base = 1700000000000000000LL;
  EXPECT_EQ(r.start_ns, base + 8000);
  EXPECT_EQ(r.end_ns, base + 18000);

  store::Reader db(dir.file("out.db"));
  auto kernels = db.kernels();
  ASSERT_EQ(kernels.size(), 1u);
  const auto& k = kernels[0];
  EXPECT_EQ(k.start, base + 10500);
  EXPECT_EQ(k.end, base + 12750);
  EXPECT_EQ(k.streamId, 7);
  EXPECT_EQ(k.correlationId, 42);
  EXPECT_EQ(k.globalPid, store::global_pid(100));
  EXPECT_EQ(k.gridX, 66);
  EXPECT_EQ(k.blockY, 2);
  EXPECT_EQ(k.registersPerThread, 32);
  EXPECT_EQ(k.staticSharedMemory, 1024);
  EXPECT_DOUBLE_EQ(k.blocksPerSm.value_or(-1), 0.5);
  EXPECT_DOUBLE_EQ(k.warpsPerSm.value_or(-1), 4.0);
  EXPECT_DOUBLE_EQ(k.estOccupancy.value_or(-1), 25);
  EXPECT_EQ(db.string(k.demangledNameId), "void k<float>(float*)");

  EXPECT_EQ(scalar(db,
                   "SELECT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id "
                   "= r.nameId "
                   "WHERE s.value = 'cuLaunchKernel'"),
            1);
  EXPECT_EQ(
      scalar(db, "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 42"),
      store::global_tid(100, 200));
  // The string tid "worker" got a synthetic id in the process.
  EXPECT_EQ(
      scalar(db,
             "SELECT globalTid >> 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 43"),
      100);
  auto syncs = db.syncs();
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].syncType, store::kSyncEvent);
  EXPECT_EQ(syncs[0].eventId, 3);
  EXPECT_FALSE(syncs[0].streamId.has_value());
  EXPECT_EQ(syncs[0].globalTid, store::global_tid(100, 200));

  auto its = db.iterations();
  ASSERT_EQ(its.size(), 1u);
  EXPECT_EQ(its[0].step, 7);
  EXPECT_EQ(its[0].start, base + 8000);
  EXPECT_EQ(its[0].end, base + 18000);
  EXPECT_EQ(its[0].globalPid, store::global_pid(100));

  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM cpu_ops WHERE category = 'python_function'"), 1);
  EXPECT_EQ(scalar(db,
                   "SELECT externalId FROM cpu_ops c JOIN StringIds s ON s.id = c.nameId "
                   "WHERE s.value LIKE 'enumerate(DataLoader)%'"),
            4);
  EXPECT_EQ(scalar(db, "SELECT bytes FROM memory_events WHERE deviceId = 0"), 4096);
  EXPECT_EQ(scalar(db, "SELECT total_reserved FROM memory_events WHERE deviceId = 0"), 2097152);
  EXPECT_EQ(scalar(db, "SELECT bytes FROM memory_events WHERE deviceId = -1"), -16);

  auto gpus = db.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].smCount, 132);
  EXPECT_EQ(gpus[0].maxWarpsPerSm, 64);
  EXPECT_EQ(gpus[0].computeMajor, 9);
  EXPECT_EQ(gpus[0].vendor, "nvidia");
  auto procs = db.processes();
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].rank, 3);
  EXPECT_EQ(procs[0].world_size, 8);
  EXPECT_EQ(procs[0].command, "python3 train.py");
  EXPECT_EQ(text(db, "SELECT name FROM workflows"), "synthetic");
}

TEST(KinetoImporter, GzipAndBareArrayAndDetection) {
  ScratchDir dir;
  const std::string events =
      R"([{"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 1, "dur": 1, "args": {"device": 0}}])";
  const std::string gz = dir.write("t.json.gz", gzip_bytes(events));
  const std::string plain = dir.write("t.trace", "\n  " + events);
  EXPECT_EQ(detect_format(gz), Format::kineto_json_gz);
  EXPECT_EQ(detect_format(plain), Format::kineto_json);
  auto results = import_files({gz, plain}, dir.file("out.db"));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].capture_id, 1);
  EXPECT_EQ(results[1].capture_id, 2);
  store::Reader db(dir.file("out.db"));
  EXPECT_EQ(count(db, "CUPTI_ACTIVITY_KIND_KERNEL", 1), 1);
  EXPECT_EQ(count(db, "CUPTI_ACTIVITY_KIND_KERNEL", 2), 1);
  EXPECT_EQ(scalar(db, "SELECT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = 2"), 7);
  EXPECT_EQ(db.captures().size(), 2u);
}

// `gzip -c a b > c` writes two gzip members; gzip reads them as one stream, and so do we. The
// ISIZE trailer (the first size guess) is only the last member's, so the output buffer must grow.
TEST(KinetoImporter, ConcatenatedGzipMembersAreOneDocument) {
  ScratchDir dir;
  std::string events = R"({"traceEvents": [)";
  for (int i = 0; i < 3000; ++i)
    events += std::string(i ? "," : "") +
              R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": )" +
              std::to_string(i * 10) + R"(, "dur": 2, "args": {"device": 0}})";
  events += "]}";
  const size_t cut = events.size() - 40;
  const std::string gz =
      dir.write("two.json.gz", gzip_bytes(events.substr(0, cut)) + gzip_bytes(events.substr(cut)));
  auto results = import_files({gz}, dir.file("out.db"));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].kernels, 3000);
  EXPECT_EQ(results[0].input_bytes, static_cast<int64_t>(events.size()));
}

TEST(KinetoImporter, ProgressIsReported) {
  ScratchDir dir;
  std::string events = "[";
  for (int i = 0; i < 100; ++i)
    events += std::string(i ? "," : "") +
              R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": )" +
              std::to_string(i) + R"(, "dur": 1})";
  events += "]";
  const std::string in = dir.write("p.json", events);
  ImportOptions opt;
  opt.progress_every_events = 10;
  int calls = 0;
  bool done = false;
  opt.progress = [&](const ImportProgress& p) {
    ++calls;
    EXPECT_LE(p.bytes_done, p.bytes_total);
    done = done || p.done;
  };
  import_files({in}, dir.file("out.db"), opt);
  EXPECT_GE(calls, 10);
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace fleetscope::importers::test
