// Numbers the analyzer reads are untrusted: a corrupted database (a REAL 1e300, INT64_MIN or a
// text value where a time belongs) is an InputError naming the file, table, row and column, both
// in load_capture and in the fleet ranking; a launch grid of 2147483647^3 blocks saturates
// instead of overflowing int64.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir =
      fs::temp_directory_path() /
      ("fleetscope-untrusted-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

const char* kTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8, "ts": 10, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2147483647, 2147483647, 2147483647], "block": [1, 1, 1]}},
  {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2, 3, 4], "block": [1, 1, 1]}}
]})";

std::string imported_db(const Scratch& s) {
  const std::string trace = s.write("t.json", kTrace);
  const std::string db = (s.dir / "t.db").string();
  importers::import_files({trace}, db);
  return db;
}

void corrupt(const std::string& db, const std::string& sql) {
  store::Database::open(db, store::OpenMode::read_write).exec(sql);
}

void expect_load_error(const std::string& db, const std::vector<std::string>& needles) {
  try {
    store::Reader reader(db);
    (void)load_capture(reader, resolve_capture_id(reader, std::nullopt));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(db, 0), 0u) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  try {
    (void)rank_workflows({db});
    ADD_FAILURE() << "fleet: no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(db, 0), 0u) << e.what();
  }
}

TEST(UntrustedStore, CorruptedTimesAreRejectedWithTheFileTableAndColumn) {
  Scratch s;
  const std::string db = imported_db(s);
  {
    store::Reader reader(db);
    EXPECT_NO_THROW((void)load_capture(reader, 1));
  }
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1e300 WHERE rowid = 1");
  expect_load_error(db, {"table CUPTI_ACTIVITY_KIND_KERNEL row 1", "column start", "real number"});
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808 WHERE rowid = 1");
  expect_load_error(db, {"CUPTI_ACTIVITY_KIND_KERNEL", "column start", "out of range"});
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 1");
  expect_load_error(db, {"column start", "text"});
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 20000, end = 10 WHERE rowid = 1");
  expect_load_error(db, {"before start"});
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 25000 WHERE rowid = 1");
  corrupt(db, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = 1e300");
  expect_load_error(db, {"table CUPTI_ACTIVITY_KIND_RUNTIME", "column end"});
}

TEST(UntrustedStore, ReaderRejectsCorruptedTimes) {
  Scratch s;
  const std::string db = imported_db(s);
  corrupt(db,
          "INSERT INTO memory_events(ts, captureId, globalPid, deviceId, bytes) "
          "VALUES (1e300, 1, NULL, 0, 4096)");
  try {
    store::Reader reader(db);
    (void)reader.memory_events({});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(db, 0), 0u) << msg;
    EXPECT_NE(msg.find("table memory_events"), std::string::npos) << msg;
    EXPECT_NE(msg.find("column ts is the real number"), std::string::npos) << msg;
  }
  expect_load_error(db, {"memory_events"});
}

// A streamed .json.gz learns baseTimeNanoseconds only after the events: CaptureSink shifts the
// columns it already holds (RowSink::shift_times) and ends equal to the whole-document read.
TEST(CaptureSinkShift, StreamedTrailingBaseTimeEqualsWholeDocument) {
  Scratch s;
  std::string json = kTrace;
  json.insert(json.rfind('}'), R"(, "baseTimeNanoseconds": 1700000000000000000)");
  const std::string path = s.write("late.json", json);
  auto load = [&](int64_t whole) {
    CaptureSink sink;
    importers::ImportOptions options;
    options.whole_document_bytes = whole;
    const auto result = importers::import_file(path, sink, options);
    return sink.take(result.capture_id);
  };
  const CaptureData whole = load(-1), streamed = load(0);
  ASSERT_EQ(whole.gpu.size(), 2u);
  EXPECT_EQ(whole.gpu.start[0], 1700000000000000000 + 20000);
  EXPECT_EQ(streamed.gpu.start, whole.gpu.start);
  EXPECT_EQ(streamed.gpu.end, whole.gpu.end);
  EXPECT_EQ(streamed.runtime.start, whole.runtime.start);
  EXPECT_EQ(streamed.capture.start_ns, whole.capture.start_ns);
}

TEST(UntrustedStore, HugeGridsSaturate) {
  Scratch s;
  const std::string trace = s.write("t.json", kTrace);
  const CaptureData direct = load_trace_file(trace);
  const std::string db = imported_db(s);
  store::Reader reader(db);
  const CaptureData loaded = load_capture(reader, 1);
  for (const CaptureData* data : {&direct, &loaded}) {
    ASSERT_EQ(data->gpu.grid_blocks.size(), 2u);
    EXPECT_EQ(data->gpu.grid_blocks[0], INT64_MAX);
    EXPECT_EQ(data->gpu.grid_blocks[1], 24);
  }
  EXPECT_EQ(grid_block_count(-1, 5, 5), 0);
  EXPECT_EQ(grid_block_count(1 << 20, 1 << 20, 1 << 20), int64_t{1} << 60);
}

}  // namespace
}  // namespace fleetscope::analyzer
