// Bad input: every case gets a one-line InputError naming the file and the position (byte / line /
// event index) or the table, and leaves no output database and no temporary file behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "fleetscope/importers/import_command.h"
#include "fleetscope/importers/importers.h"
#include "importer_test_util.h"
#include "nsys_export.h"

namespace fleetscope::importers::test {
namespace {

// Runs import_files on `input` into dir/out.db; expects an Error whose message contains the file
// name and every `needles` entry; then checks that only the inputs remain in the folder.
void expect_rejected(const ScratchDir& dir, const std::string& input,
                     const std::vector<std::string>& needles) {
  auto before = dir.entries();
  const std::string out = dir.file("out.db");
  try {
    import_files({input}, out);
    ADD_FAILURE() << "no error for " << input;
  } catch (const Error& e) {  // InputError, or Error "cannot read FILE: ..." (file_errors.h)
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_TRUE(msg.rfind(input, 0) == 0 || msg.rfind("cannot read " + input + ": ", 0) == 0)
        << "message does not start with the file: " << msg;
    for (const auto& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(dir.entries(), before) << "something was left behind";
}

TEST(BadInput, TruncatedGzip) {
  ScratchDir dir;
  std::string json = R"({"traceEvents": [)";
  for (int i = 0; i < 2000; ++i)
    json += std::string(i ? "," : "") +
            R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(i * 7) + R"(, "dur": 3})";
  json += "]}";
  std::string gz = gzip_bytes(json);
  const std::string in = dir.write("trunc.json.gz", gz.substr(0, gz.size() / 2));
  expect_rejected(dir, in, {"truncated gzip", "byte "});
}

TEST(BadInput, TruncatedRealTrace) {
  const std::string real = kineto_dir() + "/hta-critical_path_alexnet_trace.json.gz";
  ASSERT_TRUE(fs::exists(real)) << "shared reference data missing: " << real;
  ScratchDir dir;
  std::string gz = read_bytes(real);
  const std::string in = dir.write("alexnet.json.gz", gz.substr(0, gz.size() - 100));
  expect_rejected(dir, in, {"truncated gzip", "of compressed input"});
}

TEST(BadInput, CorruptGzip) {
  ScratchDir dir;
  std::string gz = gzip_bytes(std::string(5000, ' ') + "{\"traceEvents\": []}");
  for (size_t i = 20; i < 40 && i < gz.size(); ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  const std::string in = dir.write("corrupt.json.gz", gz);
  expect_rejected(dir, in, {"gzip", "byte "});
}

TEST(BadInput, InvalidJson) {
  ScratchDir dir;
  const std::string in = dir.write("bad.json",
                                   "{\"traceEvents\": [\n"
                                   "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                                   "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},\n"
                                   "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"b\", "
                                   "\"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1,,}\n"
                                   "]}");
  expect_rejected(dir, in, {"invalid JSON", "byte ", "line "});
}

TEST(BadInput, TruncatedJson) {
  ScratchDir dir;
  const std::string in = dir.write("cut.json",
                                   "{\"traceEvents\": [\n {\"ph\": \"X\", \"cat\": \"cpu_op\", "
                                   "\"name\": \"a\", \"pid\": 1, \"ts\": 1");
  expect_rejected(dir, in, {"byte "});
}

TEST(BadInput, NotJsonAtAll) {
  ScratchDir dir;
  const std::string in = dir.write("notes.txt", "hello, this is not a trace\n");
  expect_rejected(dir, in,
                  {"cannot read ", "not a trace file (it holds text starting with 'hello"});
}

TEST(BadInput, WrongFieldTypes) {
  ScratchDir dir;
  const std::string in = dir.write("types.json",
                                   "{\"traceEvents\": [\n"
                                   "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                                   "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},\n"
                                   "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
                                   "\"pid\": 0, \"tid\": 7, \"ts\": \"soon\", \"dur\": 1}\n"
                                   "]}");
  expect_rejected(dir, in, {"traceEvents[1]", "\"ts\"", "a string", "line 3"});
}

// A complete event that ends before it starts (dur < 0) is refused with its position, not
// clamped to a zero-length event (Perfetto drops such slices as an import error too).
TEST(BadInput, NegativeDuration) {
  ScratchDir dir;
  const std::string in = dir.write("negdur.json",
                                   "{\"traceEvents\": [\n"
                                   "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                                   "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},\n"
                                   "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
                                   "\"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": -2.5, "
                                   "\"args\": {\"device\": 0, \"stream\": 7}}\n"
                                   "]}");
  expect_rejected(dir, in,
                  {"traceEvents[1] (cat \"kernel\")", "field \"dur\" is negative (-2500 ns)",
                   "expected a duration >= 0", "line 3"});
}

TEST(BadInput, WrongArgTypes) {
  ScratchDir dir;
  const std::string in = dir.write(
      "args.json",
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
      "\"tid\": 7, \"ts\": 1, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7, "
      "\"grid\": \"big\"}}]}");
  expect_rejected(dir, in, {"traceEvents[0]", "args.grid", "byte "});
}

// Values no profiler writes (a negative GPU index, grid or block dimension, byte count, an
// occupancy outside 0-100 %, a negative device property) were imported as given: device -1
// became a "GPU -1" with findings of its own, a grid of -5 blocks a few_blocks finding.
TEST(BadInput, ImpossibleValuesAreRefusedAtTheirEvent) {
  ScratchDir dir;
  auto kernel = [](const std::string& args) {
    return "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
           "\"tid\": 7, \"ts\": 1, \"dur\": 1, \"args\": {" +
           args + "}}]}";
  };
  struct Case {
    std::string file, json, field, expected;
  };
  const std::vector<Case> cases = {
      {"device.json", kernel("\"device\": -1, \"stream\": 7"), "\"args.device\"",
       "expected a GPU index (0 or more)"},
      {"grid.json", kernel("\"device\": 0, \"stream\": 7, \"grid\": [-5, 1, 1]"), "\"args.grid\"",
       "expected a dimension of 1 or more"},
      {"block.json", kernel("\"device\": 0, \"stream\": 7, \"block\": [128, 0, 1]"),
       "\"args.block\"", "expected a dimension of 1 or more"},
      {"occupancy.json",
       kernel("\"device\": 0, \"stream\": 7, \"est. achieved occupancy %\": 5000"),
       "\"args.est. achieved occupancy %\"", "expected a percentage from 0 to 100"},
      {"registers.json", kernel("\"device\": 0, \"stream\": 7, \"registers per thread\": -3"),
       "\"args.registers per thread\"", "expected 0 or more"},
      {"bytes.json",
       "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD "
       "(Pageable -> Device)\", \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 1, \"args\": "
       "{\"device\": 0, \"stream\": 7, \"bytes\": -1000000}}]}",
       "\"args.bytes\"", "expected 0 or more"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string in = dir.write(c.file, c.json);
    expect_rejected(dir, in, {"traceEvents[0]", c.field, c.expected, "byte "});
  }
  const std::string props =
      dir.write("props.json",
                "{\"deviceProperties\": [{\"id\": 0, \"name\": \"A100\", \"totalGlobalMem\": -1}], "
                "\"traceEvents\": []}");
  expect_rejected(dir, props,
                  {"\"deviceProperties[].totalGlobalMem\"", "out of range (-1)", "0 or more"});
}

// Values Kineto's writer never produces (issue 23): a stream id of 1.5 (truncated to stream 1), a
// negative ts (Kineto clamps a time before baseTimeNanoseconds to 0: transToRelativeTime), a rank
// outside its world (PyTorch writes dist.get_rank() and dist.get_world_size(), so 0 <= rank <
// world_size) were all imported as given.
TEST(BadInput, ValuesKinetoNeverWritesAreRefusedWithTheirPosition) {
  ScratchDir dir;
  auto kernel = [](const std::string& fields) {
    return "{\"traceEvents\": [\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},\n  {\"ph\": \"X\", \"cat\": "
           "\"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"dur\": 1, " +
           fields + "}\n]}";
  };
  struct Case {
    std::string file, json;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"stream.json",
       kernel("\"ts\": 5, \"args\": {\"device\": 0, \"stream\": 1.5}"),
       {"traceEvents[1] (cat \"kernel\")", "field \"args.stream\" is not a whole number (1.5)",
        "expected an integer", "line 3"}},
      {"correlation.json",
       kernel("\"ts\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 2.5}"),
       {"traceEvents[1]", "field \"args.correlation\" is not a whole number (2.5)", "line 3"}},
      {"tid.json",
       "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
       "\"tid\": 7.25, \"ts\": 1, \"dur\": 1, \"args\": {\"device\": 0}}]}",
       {"traceEvents[0]", "field \"tid\" is not a whole number (7.25)", "expected an integer"}},
      {"negts.json",
       kernel("\"ts\": -5, \"args\": {\"device\": 0, \"stream\": 7}"),
       {"traceEvents[1] (cat \"kernel\")", "field \"ts\" is negative (-5000 ns)",
        "expected a time >= 0", "line 3"}},
      {"negmem.json",
       "{\"traceEvents\": [{\"ph\": \"i\", \"name\": \"[memory]\", \"pid\": 9, \"tid\": 9, "
       "\"ts\": -0.5, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Bytes\": 8}}]}",
       {"traceEvents[0]", "field \"ts\" is negative (-500 ns)"}},
      {"negbase.json",
       "{\"traceEvents\": [], \"baseTimeNanoseconds\": -1000}",
       {"\"baseTimeNanoseconds\" is negative (-1000)", "expected a time in ns since 1970"}},
      {"rank.json",
       "{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 4, \"world_size\": 4},\n"
       " \"traceEvents\": []}",
       {"field \"distributedInfo.rank\" is out of range (4)",
        "expected a rank below distributedInfo.world_size (4)", "line 1"}},
      {"rank-after.json",
       "{\"distributedInfo\": {\"world_size\": 2,\n \"rank\": 7}, \"traceEvents\": []}",
       {"\"distributedInfo.rank\" is out of range (7)", "below distributedInfo.world_size (2)",
        "line 2"}},
      {"world.json",
       "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 0}, \"traceEvents\": []}",
       {"\"distributedInfo.world_size\" is out of range (0)",
        "expected a number of processes from 1"}},
      {"negrank.json",
       "{\"traceEvents\": [], \"distributedInfo\": {\"rank\": -1}}",
       {"\"distributedInfo.rank\" is out of range (-1)", "expected a rank from 0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string in = dir.write(c.file, c.json);
    auto needles = c.needles;
    needles.push_back("byte ");
    expect_rejected(dir, in, needles);
  }
  // What Kineto does write still imports: a whole number written as a real, a rank without a
  // world size (older PyTorch), the last rank of its world, ts 0.
  for (const std::string& json :
       {kernel("\"ts\": 0, \"args\": {\"device\": 0, \"stream\": 7.0}"),
        std::string("{\"distributedInfo\": {\"rank\": 3}, \"traceEvents\": []}"),
        std::string("{\"distributedInfo\": {\"rank\": 3, \"world_size\": 4}, "
                    "\"traceEvents\": []}")}) {
    const std::string in = dir.write("good.json", json);
    const std::string out = dir.file("good.db");
    EXPECT_NO_THROW(import_files({in}, out)) << json;
    fs::remove(out);
    fs::remove(out + ".capture1.zoom");
    fs::remove(in);
  }
}

TEST(BadInput, TraceEventsNotAnArray) {
  ScratchDir dir;
  const std::string in = dir.write("shape.json", "{\"traceEvents\": {\"ph\": \"X\"}}");
  expect_rejected(dir, in, {"traceEvents", "an object, expected an array", "byte "});
}

TEST(BadInput, MissingRequiredFields) {
  ScratchDir dir;
  {
    const std::string in = dir.write(
        "nots.json",
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
        "\"pid\": 0, \"tid\": 7, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7}}]}");
    expect_rejected(dir, in, {"traceEvents[0]", "missing required field \"ts\"", "byte "});
  }
  {
    const std::string in =
        dir.write("nostream.json",
                  "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
                  "\"pid\": \"gpu\", \"ts\": 1, \"dur\": 1}]}");
    expect_rejected(dir, in, {"traceEvents[0]", "missing required field", "byte "});
  }
  {
    const std::string in =
        dir.write("noph.json", "{\"traceEvents\": [{\"cat\": \"kernel\", \"ts\": 1}]}");
    expect_rejected(dir, in, {"traceEvents[0]", "\"ph\""});
  }
  {
    const std::string in =
        dir.write("noevents.json", "{\"schemaVersion\": 1, \"deviceProperties\": []}");
    expect_rejected(dir, in, {"missing required field \"traceEvents\""});
  }
}

TEST(BadInput, EmptyFile) {
  ScratchDir dir;
  const std::string in = dir.write("empty.json", "");
  expect_rejected(dir, in, {"empty file", "byte 0"});
}

TEST(BadInput, CorruptSqlite) {
  ScratchDir dir;
  std::string bytes = std::string("SQLite format 3") + '\0' + std::string(4080, '\x7f');
  const std::string in = dir.write("corrupt.sqlite", bytes);
  expect_rejected(dir, in, {"sqlite"});
}

TEST(BadInput, NsysFileMissingTables) {
  ScratchDir dir;
  const std::string in = dir.file("other.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(in.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES ('hi');", nullptr, nullptr,
               nullptr);
  sqlite3_close(db);
  expect_rejected(dir, in, {"table StringIds", "missing table"});

  const std::string in2 = dir.file("strings-only.sqlite");
  ASSERT_EQ(sqlite3_open(in2.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);", nullptr, nullptr,
               nullptr);
  sqlite3_close(db);
  expect_rejected(dir, in2, {"table CUPTI_ACTIVITY_KIND_KERNEL", "missing table"});
}

TEST(BadInput, NsysTableMissingColumnOrDanglingString) {
  ScratchDir dir;
  const std::string in = dir.file("cols.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(in.c_str(), &db), SQLITE_OK);
  sqlite3_exec(
      db,
      "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER, deviceId INTEGER);",
      nullptr, nullptr, nullptr);
  sqlite3_close(db);
  expect_rejected(dir, in,
                  {"table CUPTI_ACTIVITY_KIND_KERNEL", "missing required column 'streamId'"});

  const std::string in2 = dir.file("dangling.sqlite");
  ASSERT_EQ(sqlite3_open(in2.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db,
               "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
               "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, globalTid "
               "INTEGER, nameId INTEGER);"
               "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 2, 3, 99);",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
  expect_rejected(dir, in2, {"table CUPTI_ACTIVITY_KIND_RUNTIME row 1", "string id 99"});
}

// The nsys export took what the Kineto importer refuses (issue 23's hostile pass): a kernel that
// ends before it starts, a stream 1.5 (truncated to 1), a grid of -5 blocks, -5 bytes copied, a
// GPU -1, a 32-bit id past 2^32 (cut to its low bits). Each is refused at its table and row.
TEST(BadInput, NsysValuesNoCuptiRecordHasAreRefusedAtTheirRow) {
  ScratchDir dir;
  struct Case {
    std::string name, sql;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"end.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_KERNEL row 1", "column 'end'", "is before column 'start'",
        "expected end >= start"}},
      {"stream.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 1.5 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_KERNEL row 1", "column 'streamId' is not a whole number",
        "(1.5)", "expected an integer"}},
      {"grid.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = -5 WHERE rowid = 1",
       {"column 'gridX' is out of range (-5), expected a dimension of 1 or more"}},
      {"device.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = -1 WHERE rowid = 1",
       {"column 'deviceId' is out of range (-1), expected a GPU index (0 or more)"}},
      {"context.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET contextId = 8589934593 WHERE rowid = 1",
       {"column 'contextId' is out of range (8589934593), expected a 32-bit integer"}},
      {"bytes.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -5 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_MEMCPY row 1",
        "column 'bytes' is out of range (-5), expected 0 or more"}},
      // Every event table goes through the one import loop: the checks hold in each.
      {"memset-bytes.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET bytes = -5 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_MEMSET row 1",
        "column 'bytes' is out of range (-5), expected 0 or more"}},
      {"memcpy-device.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET deviceId = -1 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_MEMCPY row 1",
        "column 'deviceId' is out of range (-1), expected a GPU index (0 or more)"}},
      {"runtime-end.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 1 WHERE rowid = 2",
       {"table CUPTI_ACTIVITY_KIND_RUNTIME row 2", "is before column 'start'"}},
      {"sync-end.sqlite",
       "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET end = start - 1 WHERE rowid = 1",
       {"table CUPTI_ACTIVITY_KIND_SYNCHRONIZATION row 1", "is before column 'start'"}},
      {"nvtx-end.sqlite",
       "UPDATE NVTX_EVENTS SET end = start - 1 WHERE rowid = 1",
       {"table NVTX_EVENTS row 1", "is before column 'start'"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string in = test_support::make_nsys_export(dir.file(c.name));
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(in.c_str(), &db), SQLITE_OK);
    test_support::exec_sql(db, c.sql);
    sqlite3_close(db);
    expect_rejected(dir, in, c.needles);
  }
  // CUPTI's "no id" (4294967295 as a uint32) is still kept, as -1.
  const std::string none = test_support::make_nsys_export(dir.file("none.sqlite"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(none.c_str(), &db), SQLITE_OK);
  test_support::exec_sql(db, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET contextId = 4294967295");
  sqlite3_close(db);
  EXPECT_NO_THROW(import_files({none}, dir.file("none.db")));
}

TEST(BadInput, SecondFileBadLeavesNothingFromTheFirst) {
  ScratchDir dir;
  const std::string good = dir.write("good.json", "{\"traceEvents\": []}");
  const std::string bad = dir.write("bad.json", "{\"traceEvents\": [");
  auto before = dir.entries();
  EXPECT_THROW(import_files({good, bad}, dir.file("out.db")), InputError);
  EXPECT_EQ(dir.entries(), before);
}

// The CLI: exit codes, stdout/stderr split, --force, and no output on failure.
TEST(ImportCommand, SummaryProgressAndForce) {
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  const std::string out_db = dir.file("out.db");
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({in, "-o", out_db}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), out_db + "\n");
  EXPECT_NE(err.str().find(in + ": capture 1 (kineto-json): 1 kernels"), std::string::npos)
      << err.str();
  EXPECT_TRUE(fs::exists(out_db));

  std::ostringstream out2, err2;
  EXPECT_EQ(run_import_command({in, "-o", out_db}, out2, err2), 1);
  EXPECT_NE(err2.str().find("already exists"), std::string::npos);
  EXPECT_EQ(out2.str(), "");

  std::ostringstream out3, err3;
  const std::string copy = dir.write("copy.json", read_bytes(in));
  EXPECT_EQ(run_import_command({in, copy, "-o", out_db, "--force"}, out3, err3), 0) << err3.str();
  store::Reader db(out_db);
  EXPECT_EQ(db.captures().size(), 2u);
}

// One file named twice (again, or through another path) is imported once, as `fleet` counts it
// once: `import a.json ./a.json` made two identical captures, and every fleet view of the
// database showed the job's GPU-hours twice.
TEST(ImportCommand, OneFileNamedTwiceIsImportedOnce) {
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  const std::string again = dir.path().string() + "/./t.json";
  const std::string out_db = dir.file("out.db");
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({in, again, "-o", out_db}, out, err), 0) << err.str();
  EXPECT_NE(err.str().find("import: " + again + ": the same file as " + in + "; imported once"),
            std::string::npos)
      << err.str();
  store::Reader db(out_db);
  EXPECT_EQ(db.captures().size(), 1u);
}

// A fleetscope database given to `import` was read as an nsys export: its CPU ops, iterations
// and memory events were lost, and one of a newer schema was imported without a word.
TEST(BadInput, AFleetscopeDatabaseIsNotImportedAsAnNsysExport) {
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  const std::string db = dir.file("run.db");
  import_files({in}, db);
  fs::remove(db + ".capture1.zoom");
  fs::remove(in);
  expect_rejected(dir, db, {"it is a fleetscope database already", "expected a Kineto JSON trace"});
}

// A UTF-8 byte order mark before the JSON (Windows editors, Python's "utf-8-sig") is ignored, as
// RFC 8259 lets a parser do: format detection already took such a file for JSON, then the parser
// refused it at byte 0.
TEST(BadInput, AByteOrderMarkBeforeTheJsonIsIgnored) {
  ScratchDir dir;
  const std::string json =
      "\xEF\xBB\xBF"
      R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})";
  for (const std::string& in :
       {dir.write("bom.json", json), dir.write("bom.json.gz", gzip_bytes(json))}) {
    const std::string out = dir.file("bom.db");
    const auto results = import_files({in}, out);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].kernels, 1);
    fs::remove(out);
    fs::remove(out + ".capture1.zoom");
  }
  // Positions in errors are still the file's: the bad "ts" is at the same byte with the mark.
  const std::string bad =
      dir.write("bad.json", "\xEF\xBB\xBF{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"x\"}]}");
  expect_rejected(dir, bad, {"byte 20 (line 1): traceEvents[0]", "\"ts\" is a string"});
}

// A key given twice has no one meaning (JSON leaves it open; readers take the first or the last):
// the importer took the last "ts" of an event, and the first of two "traceEvents" arrays.
TEST(BadInput, AFieldGivenTwiceIsRefused) {
  ScratchDir dir;
  const std::string ts = dir.write(
      "ts.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "ts": 7, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  expect_rejected(dir, ts,
                  {"traceEvents[0]: field \"ts\" given twice", "expected each field once"});
  const std::string stream = dir.write(
      "stream.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {"device": 0, "stream": 7, "stream": 9}}]})");
  expect_rejected(dir, stream, {"traceEvents[0]: field \"args.stream\" given twice"});
  const std::string events = dir.write(
      "events.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}], "traceEvents": []})");
  expect_rejected(dir, events, {"field \"traceEvents\" given twice", "byte "});
}

TEST(ImportCommand, BadInputExitsOneWithNoOutput) {
  ScratchDir dir;
  const std::string in = dir.write("empty.json.gz", "");
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({in, "-o", dir.file("out.db")}, out, err), 1);
  EXPECT_EQ(out.str(), "");
  EXPECT_NE(err.str().find("error: " + in + ": byte 0: empty file"), std::string::npos)
      << err.str();
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"empty.json.gz"});
  // Existing output is kept untouched when --force is given but the import fails.
  const std::string keep = dir.write("keep.db", "old");
  std::ostringstream out2, err2;
  EXPECT_EQ(run_import_command({in, "-o", keep, "--force"}, out2, err2), 1);
  EXPECT_EQ(read_bytes(keep), "old");
}

// OUT.db is a symbolic link to nowhere: it exists (the rename would replace the link), so it is
// refused up front like any existing file. It was imported in full and then refused with
// "appeared while this output was being written (another writer?)".
TEST(ImportCommand, AnOutputThatIsADanglingLinkAlreadyExists) {
  ScratchDir dir;
  const std::string in = dir.write("t.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  const std::string link = dir.file("out.db");
  fs::create_symlink(dir.file("nowhere.db"), link);
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({in, "-o", link}, out, err), 1);
  EXPECT_EQ(err.str(), "error: " + link + ": already exists (use --force to replace it)\n");
  EXPECT_THROW(import_files({in}, link), Error);
  try {
    import_files({in}, link);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), link + ": already exists (use --force to replace it)");
  }
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_FALSE(fs::exists(dir.file("nowhere.db")));
  // --force replaces the link itself, never the file it names.
  std::ostringstream out2, err2;
  EXPECT_EQ(run_import_command({in, "-o", link, "--force"}, out2, err2), 0) << err2.str();
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_FALSE(fs::exists(dir.file("nowhere.db")));
}

// Writing fails midway (here the file size limit, as a full disk would): the error names OUT.db
// as typed, never its temporary name ("out.db.tmp-1234-567890: database or disk is full"), and
// nothing is left behind. The import runs in a child process, which alone gets the limit.
TEST(ImportCommand, AWriteFailureNamesTheOutputNotItsTemporary) {
  ScratchDir dir;
  const std::string in = kineto_dir() + "/hta-ns_resolution_trace_rank-0.json.gz";
  const std::string out = dir.file("out.db");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    const rlimit limit{256 << 10, 256 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    std::ostringstream o, e;
    const int code = run_import_command({in, "-o", out}, o, e);
    const std::string text = std::to_string(code) + "\n" + e.str();
    if (::write(fds[1], text.data(), text.size()) < 0) ::_exit(4);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(text.rfind("1\nerror: " + out + ": ", 0), 0u) << text;
  EXPECT_EQ(text.find(".tmp-"), std::string::npos) << text;
  EXPECT_TRUE(dir.entries().empty()) << "something was left behind";
}

TEST(ImportCommand, UsageErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(run_import_command({}, out, err), 2);
  EXPECT_EQ(run_import_command({"x.json"}, out, err), 2);
  EXPECT_EQ(run_import_command({"--help"}, out, err), 0);
}

}  // namespace
}  // namespace fleetscope::importers::test

namespace fleetscope::importers::test {
namespace {

// Random corruptions of a valid trace (byte changes, truncations) either import or raise
// InputError; never another exception, never a crash, never a leftover file.
TEST(BadInput, RandomCorruptionsOnlyRaiseInputError) {
  ScratchDir dir;
  const std::string valid = R"JSON({"deviceProperties": [{"id": 0, "name": "GPU", "numSms": 4}],
 "distributedInfo": {"rank": 1, "world_size": 2},
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2.25,
   "args": {"device": 0, "stream": 7, "correlation": 4, "grid": [1, 2, 3], "block": [4, 5, 6]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 9, "dur": 1,
   "args": {"correlation": 4}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 11,
   "dur": 1, "args": {"device": 0, "stream": 7, "bytes": 8}},
  {"ph": "i", "name": "[memory]", "pid": 9, "tid": 9, "ts": 12, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 8}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": 8, "dur": 9}
 ], "baseTimeNanoseconds": 1000})JSON";
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]\",:.-0123456789eE \\azX";
  int imported = 0, rejected = 0;
  for (int i = 0; i < 160; ++i) {
    std::string bytes = valid;
    if (i % 5 == 0) {
      bytes.resize(rng() % bytes.size());
    } else {
      for (int k = 0; k < 1 + i % 3; ++k)
        bytes[rng() % bytes.size()] = alphabet[rng() % alphabet.size()];
    }
    const std::string in = dir.write("m.json", i % 2 ? bytes : gzip_bytes(bytes));
    const std::string out = dir.file("m.db");
    try {
      import_files({in}, out);
      ++imported;
      // The import also wrote the capture's timeline summary beside the database.
      EXPECT_TRUE(fs::exists(out + ".capture1.zoom")) << "case " << i;
      fs::remove(out);
      fs::remove(out + ".capture1.zoom");
    } catch (const InputError& e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      const std::string message = e.what();
      EXPECT_TRUE(message.rfind(in, 0) == 0 || message.rfind("cannot read " + in + ": ", 0) == 0)
          << message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "case " << i << ": not an InputError: " << e.what();
    }
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.json"}) << "case " << i;
  }
  EXPECT_GT(rejected, 30);
  EXPECT_GT(imported, 0);
}

}  // namespace
}  // namespace fleetscope::importers::test
