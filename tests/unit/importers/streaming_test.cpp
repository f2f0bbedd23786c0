// The streamed Kineto tokenizer: batches of any size give the same events; metadata after
// traceEvents (Kineto's baseTimeNanoseconds) lands on every row whatever the tail peek guessed;
// numbers out of range are errors, not wrapped casts; values larger than the memory budget are
// refused; non-CUDA accelerator events (MTIA, any device stream) are device work; GPU rows reach
// the writer as their launches arrive.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include "fleetscope/common/progress_line.h"
#include "fleetscope/importers/import_command.h"
#include "fleetscope/importers/importers.h"
#include "importer_test_util.h"
#include "kineto_splitter.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::test {
namespace {

using EventKey = std::tuple<size_t, size_t, std::string, std::string, std::string, int64_t>;

std::vector<EventKey> events_of(const std::string& path, kineto::TokenizerOptions options,
                                kineto::TraceMeta* meta_out = nullptr) {
  kineto::Tokenizer tok(path, options);
  kineto::TraceMeta meta = tok.read_metadata();
  std::vector<EventKey> out;
  tok.for_each_event([&](const kineto::RawEvent& ev) {
    out.emplace_back(ev.index, ev.offset, std::string(ev.ph), std::string(ev.cat),
                     std::string(ev.name), ev.ts_ns.value_or(-1));
  });
  tok.read_trailing_metadata(meta);
  if (meta_out) *meta_out = meta;
  return out;
}

TEST(KinetoStreaming, TinyBatchesGiveTheSameEventsOnEverySharedTrace) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << "shared reference data missing: " << kineto_dir();
  kineto::TokenizerOptions tiny;
  tiny.batch_bytes = 4096;  // the splitter's floor: most events straddle a window refill
  tiny.queued_batches = 1;
  tiny.max_value_bytes = size_t{4} << 20;
  tiny.whole_document_bytes = 0;  // always the streamed path (the default reads these whole)
  int files = 0;
  for (const auto& e : fs::directory_iterator(kineto_dir())) {
    if (e.path().filename().string().find("expected") != std::string::npos) continue;
    SCOPED_TRACE(e.path().string());
    kineto::TraceMeta a, b;
    const auto whole = events_of(e.path().string(), {}, &a);
    const auto pieces = events_of(e.path().string(), tiny, &b);
    ASSERT_FALSE(whole.empty());
    EXPECT_EQ(whole, pieces);
    EXPECT_EQ(a.base_time_ns, b.base_time_ns);
    EXPECT_EQ(a.devices.size(), b.devices.size());
    ++files;
  }
  EXPECT_GE(files, 10);
}

// The splitter finds event boundaries 64 bytes at a time (brackets outside strings) and falls back
// to its byte scan for escapes and values that run past what was read. Strings full of brackets
// and quotes, escapes, nesting, strings across 64-byte blocks and odd whitespace, split into tiny
// batches, must give exactly the events of the one-pass simdjson parse of the whole document.
TEST(KinetoStreaming, BracketsQuotesAndEscapesInStringsSplitLikeAWholeParse) {
  ScratchDir dir;
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  auto next = [&](uint64_t n) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return seed % n;
  };
  // Two events in three have no backslash at all (the vectorised path decides them whole).
  const std::string plain[] = {"{", "}", "[", "]", ",", ":", " ", "a", "kernel", "}}]", "[{"};
  const std::string escaped[] = {"\\\"", "\\\\", "\\n", "\\u00e9", "\\\\\\\"", "}"};
  bool escapes = false;
  auto random_string = [&] {
    std::string text;
    const uint64_t parts = next(40);
    for (uint64_t i = 0; i < parts; ++i) {
      const std::string& piece = escapes && next(4) == 0 ? escaped[next(std::size(escaped))]
                                                         : plain[next(std::size(plain))];
      text += piece;
    }
    return text;
  };
  const char* gaps[] = {"", " ", "\n", "\r\n  ", "\t", "\n\n\n    "};
  std::ostringstream json;
  json << "{\"traceEvents\": [";
  const int kEvents = 3000;
  for (int i = 0; i < kEvents; ++i) {
    escapes = i % 3 == 0;
    if (i) json << gaps[next(std::size(gaps))] << "," << gaps[next(std::size(gaps))];
    json << R"({"ph": "X", "cat": "cpu_op", "name": ")" << random_string() << "#" << i
         << R"(", "pid": 1, "tid": 2, "ts": )" << i << R"(, "dur": 1, "args": {"note": ")"
         << random_string() << R"(", "nested": [[{"x": ")" << random_string() << R"("}], []],)"
         << std::string(next(200), ' ') << R"("end": 1}})";
  }
  json << "]}";
  const std::string in = dir.write("brackets.json", json.str());

  kineto::TokenizerOptions whole;
  whole.whole_document_bytes = size_t{1} << 30;
  kineto::TokenizerOptions tiny;
  tiny.batch_bytes = 4096;
  tiny.queued_batches = 1;
  tiny.max_value_bytes = size_t{4} << 20;
  tiny.whole_document_bytes = 0;
  const auto reference = events_of(in, whole);
  ASSERT_EQ(reference.size(), static_cast<size_t>(kEvents));
  // Each way of finding an event's end this machine has (AVX-512, SSE2, the byte scan alone).
  const kineto::ObjectScan chosen = kineto::object_scan();
  int kinds = 0;
  for (auto kind :
       {kineto::ObjectScan::avx512, kineto::ObjectScan::sse2, kineto::ObjectScan::scalar}) {
    if (!kineto::object_scan_supported(kind)) continue;
    SCOPED_TRACE(static_cast<int>(kind));
    kineto::set_object_scan(kind);
    EXPECT_EQ(events_of(in, tiny), reference);
    ++kinds;
  }
  kineto::set_object_scan(chosen);
  EXPECT_GE(kinds, 2);
}

// Kineto's layout: ts relative to baseTimeNanoseconds, written after the events.
std::string trailing_base_trace(const std::string& after_events) {
  return R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8, "ts": 10.5, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}
  ], "deviceProperties": [{"id": 0, "name": "NVIDIA Late GPU", "numSms": 108}])" +
         after_events + "}";
}

void expect_absolute_times(const std::string& db, int64_t base) {
  store::Reader r(db);
  EXPECT_EQ(scalar(r, "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL"), base + 20000);
  EXPECT_EQ(scalar(r, "SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME"), base + 10500);
  EXPECT_EQ(scalar(r, "SELECT start_ns FROM captures"), base + 10500);
  EXPECT_EQ(scalar(r, "SELECT end_ns FROM captures"), base + 25000);
  EXPECT_EQ(text(r, "SELECT name FROM TARGET_INFO_GPU").value_or(""), "NVIDIA Late GPU");
}

TEST(KinetoStreaming, BaseTimeAfterTheEventsAppliesToEveryRow) {
  ScratchDir dir;
  const int64_t base = 1711964646000000000;
  const std::string json = trailing_base_trace(
      R"(, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1711964646000000000)");
  // Plain file: the base is peeked from the tail. gzip: rows are shifted once at the end.
  const std::string plain = dir.write("late.json", json);
  const std::string gz = dir.write("late.json.gz", gzip_bytes(json));
  // Read whole (every member known before the first event), and streamed.
  for (int64_t whole : {-1, 0}) {
    SCOPED_TRACE(whole);
    ImportOptions options;
    options.whole_document_bytes = whole;
    const std::string tag = std::to_string(whole);
    import_files({plain}, dir.file("plain" + tag + ".db"), options);
    import_files({gz}, dir.file("gz" + tag + ".db"), options);
    expect_absolute_times(dir.file("plain" + tag + ".db"), base);
    expect_absolute_times(dir.file("gz" + tag + ".db"), base);
  }
}

TEST(KinetoStreaming, AWrongTailGuessIsCorrected) {
  ScratchDir dir;
  // The tail's last "baseTimeNanoseconds" is a decoy inside another member.
  const std::string json = trailing_base_trace(
      R"(, "baseTimeNanoseconds": 5000000000, "extra": {"baseTimeNanoseconds": 7})");
  const std::string path = dir.write("decoy.json", json);
  ImportOptions streamed;
  streamed.whole_document_bytes = 0;
  import_files({path}, dir.file("out.db"), streamed);
  expect_absolute_times(dir.file("out.db"), 5000000000);
}

void expect_rejected(const std::string& json, const std::vector<std::string>& needles,
                     const ImportOptions& options = {}) {
  ScratchDir dir;
  const std::string in = dir.write("bad.json", json);
  try {
    import_files({in}, dir.file("out.db"), options);
    ADD_FAILURE() << "no error for " << json.substr(0, 200);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(in, 0), 0u) << msg;
    EXPECT_NE(msg.find("byte "), std::string::npos) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(dir.file("out.db")));
}

std::string one_kernel(const std::string& fields, const std::string& args) {
  return R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, )" +
         fields + R"(, "args": {)" + args + "}}]}";
}

TEST(KinetoStreaming, NumbersOutOfRangeAreErrorsNotCasts) {
  // tid above 2^63 (was wrapped), device 1e30 (was a float->int overflow), ts 1e300.
  expect_rejected(
      one_kernel(R"("pid": 0, "tid": 18446744073709551617)", R"("device": 0, "stream": 7)"),
      {"\"tid\"", "out of range"});
  expect_rejected(one_kernel(R"("pid": 0, "tid": 7)", R"("device": 1e30, "stream": 7)"),
                  {"args.device", "int64"});
  expect_rejected(one_kernel(R"("pid": 0, "tid": 7)", R"("device": 4294967296, "stream": 7)"),
                  {"args.device", "out of range"});
  expect_rejected(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1,
                  "tid": 1, "ts": 1e300, "dur": 1}]})",
                  {"\"ts\"", "out of range"});
  expect_rejected(one_kernel(R"("pid": 0, "tid": 7)",
                             R"("device": 0, "stream": 7, "grid": [1, 4294967296, 1])"),
                  {"args.grid", "out of range"});
  // A base time that pushes ts past int64.
  expect_rejected(R"({"baseTimeNanoseconds": 9223372036854775000, "traceEvents": [
                  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]})",
                  {"\"ts\"", "int64"});
}

TEST(KinetoStreaming, EventsOfPhasesNotImportedAreReadForTheirPhaseOnly) {
  // Flows (s/f), counters (C) and B/E pairs are not translated: past "ph" their fields are
  // skipped, unconverted, so a value nothing would use is no error, in both readers.
  const std::string json = R"({"traceEvents": [
  {"ph": "f", "id": 1, "pid": {"x": 1}, "tid": 2, "ts": "late", "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 42, "tid": 43, "ts": 100, "dur": 50},
  {"ph": "s", "id": 1, "ts": 1e300, "dur": -1, "cat": 7},
  {"ph": "C", "name": "mem", "ts": [1], "args": {"device": 1e30}}
  ]})";
  for (size_t whole : {size_t{1} << 20, size_t{0}}) {
    SCOPED_TRACE(whole ? "whole document" : "streamed");
    ScratchDir dir;
    const std::string in = dir.write("flows.json", json);
    kineto::TokenizerOptions options;
    options.whole_document_bytes = whole;
    const std::vector<EventKey> events = events_of(in, options);
    ASSERT_EQ(events.size(), 4u);
    // Only "ph" of a skipped event is read (the X event keeps every field).
    EXPECT_EQ(std::get<2>(events[0]), "f");
    EXPECT_EQ(std::get<3>(events[0]), "");
    EXPECT_EQ(std::get<5>(events[0]), -1);
    EXPECT_EQ(std::get<3>(events[1]), "cpu_op");
    EXPECT_EQ(std::get<5>(events[1]), 100000);
    ImportOptions import_options;
    import_options.whole_document_bytes = static_cast<int64_t>(whole);
    const ImportResult r = import_files({in}, dir.file("out.db"), import_options).at(0);
    EXPECT_EQ(r.cpu_ops, 1);
    EXPECT_EQ(r.events_skipped, 3);
  }
  // The same values in an event that is translated are still errors.
  expect_rejected(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1,
                  "tid": 1, "ts": "late", "dur": 1}]})",
                  {"\"ts\"", "expected a number"});
  // "ph" is what decides, wherever it stands in the event.
  expect_rejected(R"({"traceEvents": [{"ts": "late", "ph": "X", "cat": "cpu_op", "name": "a",
                  "pid": 1, "tid": 1, "dur": 1}]})",
                  {"\"ts\"", "expected a number"});
}

TEST(KinetoStreaming, AValueLargerThanTheBudgetIsRefused) {
  ImportOptions small;
  small.memory_budget_bytes = int64_t{16} << 20;  // one value may use 4 MiB
  const std::string huge(5 << 20, 'x');
  expect_rejected(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")" + huge +
                      R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})",
                  {"memory budget"}, small);
  // Below the limit it imports.
  ScratchDir dir;
  const std::string ok = dir.write(
      "ok.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")" +
                     std::string(3 << 20, 'y') + R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})");
  EXPECT_EQ(import_files({ok}, dir.file("ok.db"), small).at(0).cpu_ops, 1);
}

// Malformed top levels: the streaming splitter's messages (whole_document_bytes = 0 forces the
// streamed path), and an InputError with a byte position from the whole-document path too.
void expect_both_paths_reject(const std::string& json, const std::string& streamed_message) {
  ScratchDir dir;
  const std::string in = dir.write("bad.json", json);
  kineto::TokenizerOptions streamed;
  streamed.whole_document_bytes = 0;
  try {
    kineto::Tokenizer tok(in, streamed);
    kineto::TraceMeta meta = tok.read_metadata();
    tok.for_each_event([](const kineto::RawEvent&) {});
    tok.read_trailing_metadata(meta);
    ADD_FAILURE() << "streamed: no error for " << json;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(in, 0), 0u) << msg;
    EXPECT_NE(msg.find("byte "), std::string::npos) << msg;
    EXPECT_NE(msg.find(streamed_message), std::string::npos) << msg;
  }
  expect_rejected(json, {});
}

TEST(KinetoStreaming, TruncatedAndMalformedTopLevelsNameThePosition) {
  expect_both_paths_reject(R"({"traceEvents": [{"ph": "X"}, )", "unexpected end of input");
  expect_both_paths_reject(R"({"traceEvents": [{"ph": "X", "name": "unterminated}])",
                           "unterminated string");
  expect_both_paths_reject(R"({"traceEvents": [] "x": 1})", "expected ',' or '}'");
  expect_both_paths_reject(R"({"traceEvents": [{"ph": "X"} {"ph": "X"}]})", "expected ',' or ']'");
  expect_both_paths_reject(R"({"traceEvents": []} trailing)", "after the end of the JSON document");
  // Found by the fuzz target's reader differential: the whole-document reader took "[]]".
  expect_both_paths_reject("[]\n]\n", "after the end of the JSON document");
  expect_both_paths_reject(R"({"traceEvents": []}})", "after the end of the JSON document");
  // Members the importer does not read are still checked alike by both readers.
  expect_both_paths_reject(R"({"schemaVersion": %, "traceEvents": []})", "invalid JSON");
  expect_both_paths_reject(R"({"x": [}, "traceEvents": []})", "invalid JSON");
  expect_both_paths_reject(R"({"traceEvents": [], "x": {"a" 1}})", "invalid JSON");
  // Separators between top-level members (simdjson On-Demand alone took the first one).
  expect_both_paths_reject(R"({"a": "x" : 0, "traceEvents": []})", "between top-level members");
  expect_both_paths_reject(R"({"a": 1 "traceEvents": []})", "invalid JSON");
  expect_both_paths_reject(R"({"a" 1, "traceEvents": []})", "invalid JSON");
  expect_both_paths_reject(R"({"x": [ "numSms": 108}], "traceEvents": []})", "invalid JSON");
}

// An MTIA trace as Kineto writes it (libkineto ActivityType: mtia_runtime = host runtime calls,
// mtia_ccp_events = on-device kernels), plus an accelerator category unknown to us whose events
// carry a device stream: all device work, launches paired by correlation.
TEST(KinetoStreaming, MtiaAndDeviceStreamEventsAreDeviceWork) {
  ScratchDir dir;
  const std::string in = dir.write("mtia.json", R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 42, "tid": 43, "ts": 100, "dur": 50},
  {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 42, "tid": 43, "ts": 110, "dur": 5, "args": {"correlation": 9}},
  {"ph": "X", "cat": "mtia_ccp_events", "name": "mm_kernel", "pid": 1, "tid": 3, "ts": 120, "dur": 30, "args": {"device": 1, "stream": 3, "correlation": 9}},
  {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 42, "tid": 43, "ts": 160, "dur": 5, "args": {"correlation": 10}},
  {"ph": "X", "cat": "accel_work", "name": "add_kernel", "pid": 1, "tid": 4, "ts": 170, "dur": 10, "args": {"device": 1, "stream": 4, "correlation": 10}},
  {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": 42, "tid": 43, "ts": 1, "dur": 1}
  ]})");
  const ImportResult r = import_files({in}, dir.file("out.db")).at(0);
  EXPECT_EQ(r.kernels, 2);
  EXPECT_EQ(r.runtime_calls, 2);
  EXPECT_EQ(r.gpu_vendor.value_or(""), "mtia");
  EXPECT_FALSE(r.note.has_value()) << *r.note;
  store::Reader db(dir.file("out.db"));
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 1"), 2);
  EXPECT_EQ(scalar(db, "SELECT COUNT(DISTINCT streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 2);
  // The launching process owns the device work.
  EXPECT_EQ(scalar(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = " +
                           std::to_string(store::global_pid(42))),
            2);
  EXPECT_EQ(text(db, "SELECT gpu_vendor FROM captures").value_or(""), "mtia");
}

// Records the order in which GPU rows and runtime calls reach the sink.
struct OrderSink : store::RowSink {
  std::vector<std::string> order;  // "K<correlation>" / "R<correlation>" / "M<correlation>"
  std::map<int64_t, std::optional<int64_t>> kernel_pid;  // correlation -> globalPid
  std::map<int64_t, int64_t> memcpy_bytes;
  int64_t add_capture(const store::Capture&) override { return 1; }
  void update_capture(const store::Capture&) override {}
  int64_t add_host(const store::Host&) override { return 1; }
  int64_t add_workflow(const store::Workflow&) override { return 1; }
  void upsert_process(const store::Process&) override {}
  void add_gpu(const store::GpuInfo&) override {}
  void add(store::Kernel r) override {
    order.push_back("K" + std::to_string(r.correlationId.value_or(-1)));
    kernel_pid[r.correlationId.value_or(-1)] = r.globalPid;
  }
  void add(store::Memcpy r) override {
    order.push_back("M" + std::to_string(r.correlationId.value_or(-1)));
    memcpy_bytes[r.correlationId.value_or(-1)] = r.bytes;
  }
  void add(store::Memset) override {}
  void add(store::RuntimeCall r) override {
    order.push_back("R" + std::to_string(r.correlationId.value_or(-1)));
  }
  void add(store::Sync) override {}
  void add(store::NvtxEvent) override {}
  void add(store::CpuOp) override {}
  void add(store::Iteration) override {}
  void add(store::MemoryEvent) override {}
  void add(store::DeviceSample) override {}
  void add(store::ExternalCorrelation) override {}
  void shift_times(int64_t, int64_t) override {}
  size_t position(const std::string& what) const {
    return static_cast<size_t>(std::find(order.begin(), order.end(), what) - order.begin());
  }
};

// Kineto writes each GPU event a couple of events before the runtime call that launched it. Those
// rows go to the writer as their launch arrives (so it inserts them while the file is still being
// read, not all at the end); each still gets the launching process and the call's byte count.
// A row whose launch comes only after the lookahead, or never, is resolved at the end as before.
TEST(KinetoStreaming, GpuRowsGoOutWhenTheirLaunchArrives) {
  ScratchDir dir;
  std::ostringstream json;
  json << R"({"traceEvents": [)"
       << "\n";
  const int kLaunches = 300;
  for (int c = 1; c <= kLaunches; ++c) {
    const int pid = c % 2 ? 11 : 12;  // two processes: the one-process fallback cannot apply
    json << R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" << 100 * c
         << R"(, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": )" << c << "}},\n";
    json << R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", )j"
         << R"("pid": 0, "tid": 7, "ts": )" << 100 * c + 10
         << R"(, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": )" << 100000 + c
         << "}},\n";
    json << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )" << pid
         << R"(, "tid": 1, "ts": )" << 100 * c - 3 << R"(, "dur": 2, "args": {"correlation": )" << c
         << "}},\n";
    json << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": )" << pid
         << R"(, "tid": 1, "ts": )" << 100 * c + 7 << R"(, "dur": 2, "args": {"correlation": )"
         << 100000 + c << R"(, "size": )" << 4096 * c << "}},\n";
  }
  // A kernel whose launch comes after more than the lookahead (65,536 events) of CPU ops, and
  // one whose launch never comes.
  json << R"({"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 900000, )"
       << R"("dur": 5, "args": {"device": 0, "stream": 7, "correlation": 777777}},)"
       << "\n";
  json << R"({"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 900010, )"
       << R"("dur": 5, "args": {"device": 0, "stream": 7, "correlation": 888888}},)"
       << "\n";
  for (int i = 0; i < 70000; ++i)
    json << R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 11, "tid": 1, "ts": )"
         << 1000000 + i << R"(, "dur": 1},)"
         << "\n";
  json << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 12, "tid": 1, )"
       << R"("ts": 899990, "dur": 2, "args": {"correlation": 777777}}]})";
  const std::string in = dir.write("kineto-order.json", json.str());

  OrderSink sink;
  const ImportResult r = import_file(in, sink);
  EXPECT_EQ(r.kernels, kLaunches + 2);
  EXPECT_EQ(r.memcpys, kLaunches);
  // Streamed: the first kernel and copy reach the sink long before the last launch does.
  EXPECT_LT(sink.position("K1"), sink.position("R" + std::to_string(kLaunches)));
  EXPECT_LT(sink.position("M100001"), sink.position("R" + std::to_string(kLaunches)));
  // In file order among themselves.
  for (int c = 2; c <= kLaunches; ++c)
    EXPECT_LT(sink.position("K" + std::to_string(c - 1)), sink.position("K" + std::to_string(c)));
  for (int c = 1; c <= kLaunches; ++c) {
    const int pid = c % 2 ? 11 : 12;
    EXPECT_EQ(sink.kernel_pid[c], store::global_pid(pid)) << "kernel " << c;
    EXPECT_EQ(sink.memcpy_bytes[100000 + c], 4096 * c) << "copy " << c;
  }
  // Past the lookahead: still resolved from its launch, at the end; never launched: no process
  // (two processes ran, so none can be assumed).
  EXPECT_EQ(sink.kernel_pid[777777], store::global_pid(12));
  EXPECT_FALSE(sink.kernel_pid[888888].has_value());
  EXPECT_GT(sink.position("K777777"), sink.position("R777777"));
}

TEST(KinetoStreaming, MemoryBudgetFlag) {
  EXPECT_EQ(parse_byte_size("512M").value_or(0), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("2G").value_or(0), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1048576").value_or(0), 1048576);
  EXPECT_FALSE(parse_byte_size("lots").has_value());
  EXPECT_FALSE(parse_byte_size("5T").has_value());
  EXPECT_FALSE(parse_byte_size("99999999G").has_value());
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": []})");
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({in, "-o", dir.file("a.db"), "--memory-budget", "1M"}, out, err), 2);
  EXPECT_NE(err.str().find("at least 16M"), std::string::npos) << err.str();
  std::ostringstream out2, err2;
  EXPECT_EQ(run_import_command({in, "-o", dir.file("b.db"), "--memory-budget", "64M"}, out2, err2),
            0)
      << err2.str();
}

TEST(ProgressLine, OnlyOnATerminalWithRateAndEta) {
  std::ostringstream tty, pipe;
  {
    common::ProgressLine line(tty, "import", true);
    std::this_thread::sleep_for(std::chrono::milliseconds(80));  // a rate needs elapsed time
    line.update(25'000'000, 100'000'000, "bytes", 50'000, true);
  }
  EXPECT_NE(tty.str().find("\rimport: 25.0 MB/100.0 MB (25%), 50k events"), std::string::npos)
      << tty.str();
  EXPECT_NE(tty.str().find("ETA"), std::string::npos) << tty.str();
  EXPECT_NE(tty.str().find("\r\x1b[K"), std::string::npos) << "line not erased";
  {
    common::ProgressLine line(pipe, "import", false);
    line.update(1, 2, "bytes", 1, true);
  }
  EXPECT_EQ(pipe.str(), "");
}

TEST(ProgressLine, ImportCommandIsQuietWhenStderrIsNotATerminal) {
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})");
  std::ostringstream out, err;
  ASSERT_EQ(run_import_command({in, "-o", dir.file("o.db")}, out, err), 0) << err.str();
  // ctest runs with stderr on a pipe: only the summary, no progress.
  if (!isatty(STDERR_FILENO)) {
    EXPECT_EQ(err.str().find('\r'), std::string::npos) << err.str();
  }
  EXPECT_NE(err.str().find("capture 1"), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::importers::test
