#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace fleetscope;
using namespace fleetscope::store;

namespace {

Kernel make_kernel(int64_t start, int64_t end, int32_t stream, const std::string& name,
                   int64_t capture) {
  Kernel k;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = stream;
  k.demangledName = name;
  k.gridX = 80;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  k.correlationId = start;
  k.captureId = capture;
  return k;
}

std::string pragma(const std::string& path, const std::string& name) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, ("PRAGMA " + name).c_str(), -1, &s, nullptr);
  std::string value =
      sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "";
  sqlite3_finalize(s);
  sqlite3_close(db);
  return value;
}

}  // namespace

TEST(Store, CreateSetsVersionPageSizeAndWal) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Database db = Database::create(path);
    EXPECT_EQ(db.schema_version(), kSchemaVersion);
  }
  EXPECT_EQ(pragma(path, "page_size"), "8192");
  EXPECT_EQ(pragma(path, "journal_mode"), "wal");
  Reader reader(path);
  EXPECT_EQ(reader.schema_version(), kSchemaVersion);
  EXPECT_TRUE(reader.captures().empty());
}

TEST(Store, CreateRefusesExistingFile) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  std::ofstream(path) << "x";
  EXPECT_THROW(Database::create(path), Error);
}

TEST(Store, WriterRoundTripsEveryRowKind) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path), WriterOptions{.batch_rows = 3});
    Capture c;
    c.kind = CaptureKind::imported;
    c.source = "test";
    c.source_path = "/x.json";
    c.start_ns = 100;
    c.end_ns = 900;
    c.gpu_vendor = "nvidia";
    int64_t cap = w.add_capture(c);
    EXPECT_EQ(cap, 1);
    GpuInfo g;
    g.id = 0;
    g.captureId = cap;
    g.name = "NVIDIA A100";
    g.smCount = 108;
    g.totalMemory = 40LL << 30;
    g.computeMajor = 8;
    g.computeMinor = 0;
    w.add_gpu(g);
    w.upsert_process({.globalPid = global_pid(42), .pid = 42, .rank = 1, .world_size = 8});
    for (int i = 0; i < 10; ++i)
      w.add(
          make_kernel(100 + i * 10, 105 + i * 10, i % 2, "void ns::gemm<float>(float*, int)", cap));
    Memcpy m;
    m.start = 200;
    m.end = 260;
    m.bytes = 4096;
    m.copyKind = kMemcpyHtoD;
    m.srcKind = kMemPageable;
    m.dstKind = kMemDevice;
    m.captureId = cap;
    w.add(m);
    RuntimeCall r;
    r.start = 90;
    r.end = 99;
    r.globalTid = global_tid(42, 43);
    r.correlationId = 100;
    r.name = "cudaLaunchKernel";
    r.captureId = cap;
    w.add(r);
    CpuOp op;
    op.start = 50;
    op.end = 500;
    op.globalTid = global_tid(42, 43);
    op.name = "enumerate(DataLoader)";
    op.captureId = cap;
    w.add(op);
    w.add(Iteration{
        .captureId = cap, .globalPid = global_pid(42), .step = 7, .start = 80, .end = 400});
    w.add(MemoryEvent{.ts = 120, .captureId = cap, .deviceId = 0, .bytes = 1 << 20});
    w.add(DeviceSample{.ts = 150, .deviceId = 0, .metric = "gpu_util_pct", .value = 55.5});
    w.finish();
    EXPECT_EQ(w.stats().rows_written, 16);
  }
  EXPECT_FALSE(fs::exists(path + "-wal"));
  Reader reader(path);
  auto caps = reader.captures();
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].source_path, "/x.json");
  EXPECT_EQ(*caps[0].gpu_vendor, "nvidia");
  auto gpus = reader.gpus(1);
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(*gpus[0].smCount, 108);
  auto kernels = reader.kernels();
  ASSERT_EQ(kernels.size(), 10u);
  EXPECT_EQ(kernels[3].start, 130);
  EXPECT_EQ(kernels[3].streamId, 1);
  EXPECT_EQ(*kernels[3].registersPerThread, 32);
  EXPECT_EQ(reader.string(kernels[3].demangledNameId), "void ns::gemm<float>(float*, int)");
  EXPECT_EQ(reader.string(kernels[3].shortNameId), "gemm");
  EXPECT_EQ(kernels[0].demangledNameId, kernels[9].demangledNameId);  // interned once
  auto copies = reader.memcpys();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(*copies[0].srcKind, kMemPageable);
  auto calls = reader.runtime_calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(reader.string(calls[0].nameId), "cudaLaunchKernel");
  EXPECT_EQ(pid_of(calls[0].globalTid), 42);
  EXPECT_EQ(tid_of(calls[0].globalTid), 43);
  EXPECT_EQ(reader.string(reader.cpu_ops()[0].nameId), "enumerate(DataLoader)");
  EXPECT_EQ(reader.iterations()[0].step, 7);
  EXPECT_EQ(reader.memory_events()[0].bytes, 1 << 20);
  auto samples = reader.device_samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].metric, "gpu_util_pct");
  EXPECT_DOUBLE_EQ(samples[0].value, 55.5);
  EXPECT_EQ(*reader.processes()[0].rank, 1);
  for (const TableCount& tc : reader.counts(1)) {
    if (tc.table == "CUPTI_ACTIVITY_KIND_KERNEL") {
      EXPECT_EQ(tc.rows, 10);
    }
  }
}

TEST(Store, WindowQueryFindsLongEventsStartingBeforeTheWindow) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path));
    int64_t cap = w.add_capture({.source = "test"});
    w.add(make_kernel(0, 1000, 0, "long", cap));     // overlaps [900, 950) from far before
    w.add(make_kernel(850, 899, 0, "before", cap));  // ends before the window
    w.add(make_kernel(900, 910, 0, "inside", cap));
    w.add(make_kernel(949, 960, 1, "straddles", cap));
    w.add(make_kernel(950, 960, 0, "after", cap));  // starts at the window end: excluded
    w.finish();
  }
  Reader reader(path);
  EventFilter f;
  f.window = {900, 950};
  std::vector<std::string> names;
  for (const Kernel& k : reader.kernels(f)) names.push_back(reader.string(k.demangledNameId));
  EXPECT_EQ(names, (std::vector<std::string>{"long", "inside", "straddles"}));
  f.streamId = 1;
  EXPECT_EQ(reader.kernels(f).size(), 1u);
}

TEST(Store, ConcurrentProducersLoseNothing) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path), WriterOptions{.batch_rows = 1000, .max_queued_batches = 2});
    int64_t cap = w.add_capture({.source = "test"});
    std::vector<std::thread> producers;
    for (int t = 0; t < 4; ++t)
      producers.emplace_back([&, t] {
        for (int i = 0; i < 5000; ++i)
          w.add(make_kernel(i, i + 1, t, "k" + std::to_string(i % 7), cap));
      });
    for (auto& p : producers) p.join();
    w.finish();
  }
  Reader reader(path);
  EXPECT_EQ(reader.kernels().size(), 20000u);
}

// The daemon's agent link queues each record batch whole (Writer::add_rows) and reports it
// committed by its ticket, without waiting for what was queued after it.
TEST(Store, WholeBatchesAreCommittedByTicket) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  Writer w(Database::create(path), WriterOptions{.keep_wal_after_finish = true});
  const int64_t cap = w.add_capture({.source = "test"});
  RowVectors rows;
  std::vector<uint64_t> tickets;
  for (int b = 0; b < 3; ++b) {
    for (int i = 0; i < 100; ++i) rows.push(make_kernel(b * 100 + i, b * 100 + i + 1, b, "k", cap));
    tickets.push_back(w.add_rows(rows, 100));
    EXPECT_TRUE(rows.kernels.empty()) << "the caller's vectors come back empty";
  }
  EXPECT_LT(tickets[0], tickets[1]);
  EXPECT_LT(tickets[1], tickets[2]);
  w.wait_committed(tickets[1]);
  {
    Database reader = Database::open(path);
    auto count = reader.prepare("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    ASSERT_TRUE(count.step());
    EXPECT_GE(count.column_int(0), 200) << "the first two batches are committed";
  }
  w.wait_committed(tickets[2]);
  // A batch that cannot be inserted (its table is gone) fails its ticket, not the earlier ones.
  {
    Database other = Database::open(path, OpenMode::read_write);
    other.exec("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL");
  }
  rows.push(make_kernel(1000, 1001, 0, "k", cap));
  const uint64_t failing = w.add_rows(rows, 1);
  EXPECT_THROW(w.wait_committed(failing), std::exception);
  EXPECT_NO_THROW(w.wait_committed(tickets[2]));
}

TEST(Store, WriterDestructorKeepsQueuedRowsWithoutFinish) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path));
    int64_t cap = w.add_capture({.source = "test"});
    w.add(make_kernel(1, 2, 0, "k", cap));
  }
  EXPECT_EQ(Reader(path).kernels().size(), 1u);
}

TEST(Store, RefusesNewerSchemaWithClearMessage) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Database db = Database::create(path);
    db.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  }
  try {
    Reader reader(path);
    FAIL() << "newer schema accepted";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("schema_version 99"), std::string::npos) << m;
    EXPECT_NE(m.find("newer"), std::string::npos) << m;
  }
}

// A schema_version that is not a whole number is named as it is: 'abc' was "no schema_version
// row in 'meta'" (there is one), and '3.5' was read as 3 and migrated, failing with SQLite's
// "duplicate column name: gridId".
TEST(Store, ASchemaVersionThatIsNotANumberIsNamed) {
  test_support::TempDir dir;
  for (const std::string value : {"abc", "3.5", "-1", "", "99999999999999999999"}) {
    SCOPED_TRACE("'" + value + "'");
    std::string path = dir.file("t.db");
    fs::remove(path);
    {
      Database db = Database::create(path);
      db.exec("UPDATE meta SET value = '" + value + "' WHERE key = 'schema_version'");
    }
    try {
      Reader reader(path);
      ADD_FAILURE() << "schema_version accepted";
    } catch (const InputError& e) {
      std::string m = e.what();
      EXPECT_EQ(m, path + ": table meta: schema_version is '" + value +
                       "', expected a whole number from 1 (a fleetscope trace database)");
    }
  }
}

TEST(Store, MigratesVersionOneFileOnOpen) {
  test_support::TempDir dir;
  std::string path = dir.file("v1.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, schema_v1_sql().c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    const char* fill =
        "INSERT INTO meta VALUES ('schema_version', '1');"
        "INSERT INTO captures(id, kind, source) VALUES (1, 'imported', 'old');"
        "INSERT INTO StringIds VALUES (1, 'k');"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, demangledName, "
        "shortName, captureId) VALUES (10, 5000, 0, 7, 1, 1, 1), (6000, 6010, 0, 7, 1, 1, 1);"
        "INSERT INTO captures(id, kind, source) VALUES (2, 'imported', 'old');"
        "INSERT INTO workflows(id, name) VALUES (1, 'old-job');"
        "INSERT INTO processes(globalPid, pid, workflow_id) VALUES (1677721600, 100, 1);";
    ASSERT_EQ(sqlite3_exec(db, fill, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Reader reader(path);  // read-only open migrates a copy in memory (the file is not written)
  EXPECT_EQ(reader.schema_version(), kSchemaVersion);
  ASSERT_EQ(reader.captures().size(), 2u);
  EXPECT_FALSE(reader.captures()[0].note.has_value());
  // The migration computed the kernel extent, so the overlap query still sees the long kernel.
  EventFilter f;
  f.window = {4000, 4500};
  EXPECT_EQ(reader.kernels(f).size(), 1u);
  // v2 -> v3: the file-wide process row is kept without a capture and stands for every capture.
  ASSERT_EQ(reader.processes().size(), 1u);
  EXPECT_FALSE(reader.processes()[0].captureId.has_value());
  for (int64_t capture : {1, 2}) {
    const auto own = reader.processes(capture);
    ASSERT_EQ(own.size(), 1u);
    EXPECT_EQ(own[0].workflow_id, 1);
  }
}

// A process is (capture, pid): the same pid in two captures keeps two rows and two workflows, and
// a capture's own row wins over a migrated file-wide one.
TEST(Store, ProcessesArePerCapture) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path));
    const int64_t a = w.add_capture({.source = "a"});
    const int64_t b = w.add_capture({.source = "b"});
    const int64_t job_a = w.add_workflow({.name = "job-a"});
    const int64_t job_b = w.add_workflow({.name = "job-b"});
    w.upsert_process({.captureId = a, .globalPid = global_pid(1), .pid = 1, .workflow_id = job_a});
    w.upsert_process({.captureId = b, .globalPid = global_pid(1), .pid = 1, .workflow_id = job_b});
    w.upsert_process({.captureId = b,
                      .globalPid = global_pid(1),
                      .pid = 1,
                      .workflow_id = job_b,
                      .command = "again"});  // replaces b's row only
    w.upsert_process({.globalPid = global_pid(1), .pid = 1, .workflow_id = 99});  // legacy-style
    w.finish();
  }
  Reader reader(path);
  EXPECT_EQ(reader.processes().size(), 3u);
  const auto a = reader.processes(1), b = reader.processes(2);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].workflow_id, 1);
  EXPECT_EQ(b[0].workflow_id, 2);
  EXPECT_EQ(b[0].command, "again");
  EXPECT_EQ(reader.processes(3).size(), 1u) << "a capture without rows sees the file-wide one";
}

TEST(Store, NotSqliteNotOursEmptyAndMissingAreClearErrors) {
  test_support::TempDir dir;
  std::string text = dir.file("text.db");
  std::ofstream(text)
      << "this is not a database, it is plain text and long enough to have a header";
  std::string empty = dir.file("empty.db");
  std::ofstream(empty).flush();
  std::string foreign = dir.file("foreign.db");
  {
    sqlite3* db = nullptr;
    sqlite3_open(foreign.c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  auto message = [](const std::string& p) {
    try {
      Reader r(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(text).find("not a fleetscope database (it holds text starting with"),
            std::string::npos)
      << message(text);
  EXPECT_NE(message(empty).find("empty file"), std::string::npos) << message(empty);
  EXPECT_NE(message(foreign).find("no 'meta' table"), std::string::npos) << message(foreign);
  EXPECT_NE(message(dir.file("missing.db")).find("no such file"), std::string::npos);
  EXPECT_EQ(message(text).rfind("cannot read " + text + ": ", 0), 0u)
      << "the message names the file as given";
  EXPECT_EQ(
      message(dir.path().string()),
      "cannot read " + dir.path().string() + ": it is a directory; expected a fleetscope database");
}

TEST(Store, AtomicOutputRemovesTempUnlessCommitted) {
  test_support::TempDir dir;
  std::string final_path = dir.file("out.db");
  std::string temp;
  {
    AtomicOutput out(final_path);
    temp = out.temp_path();
    Writer w(Database::create(out.temp_path()));
    w.add_capture({.source = "test"});
    w.finish();
    EXPECT_TRUE(fs::exists(temp));
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(final_path));
  {
    AtomicOutput out(final_path);
    Writer w(Database::create(out.temp_path()));
    w.add_capture({.source = "test"});
    w.finish();
    out.commit();
  }
  EXPECT_EQ(Reader(final_path).captures().size(), 1u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(Store, QueryIsReadOnly) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path));
    w.add_capture({.source = "test"});
    w.finish();
  }
  Reader reader(path);
  QueryResult r = reader.query("SELECT id, source FROM captures");
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.columns[1], "source");
  EXPECT_EQ(*r.rows[0][1], "test");
  EXPECT_THROW(reader.query("DELETE FROM captures"), InputError);
  EXPECT_THROW(reader.query("SELEC nonsense"), InputError);
}

// Every error of Reader::query names the database file (prepare, read-only check, step).
TEST(Store, QueryErrorsNameTheFile) {
  test_support::TempDir dir;
  std::string path = dir.file("named.db");
  {
    Writer w(Database::create(path));
    w.add_capture({.source = "test"});
    w.finish();
  }
  Reader reader(path);
  auto message_of = [&](const std::string& sql) -> std::string {
    try {
      reader.query(sql);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  for (const char* sql : {"SELEC nonsense", "SELECT * FROM no_such_table", "DELETE FROM captures",
                          // fails while stepping, after a successful prepare
                          "SELECT abs(-9223372036854775807 - 1)"}) {
    const std::string message = message_of(sql);
    EXPECT_EQ(message.rfind(path + ": query: ", 0), 0u) << sql << " -> " << message;
  }
  EXPECT_NE(message_of("SELECT abs(-9223372036854775807 - 1)").find("integer overflow"),
            std::string::npos);
}

TEST(Store, FindingsRoundTripSortedByImpact) {
  test_support::TempDir dir;
  std::string path = dir.file("t.db");
  {
    Writer w(Database::create(path));
    int64_t cap = w.add_capture({.source = "test"});
    w.add_finding(
        {.captureId = cap, .rule = "a", .severity = "low", .impact_ns = 5, .recommendation = "r"});
    w.add_finding({.captureId = cap,
                   .rule = "b",
                   .severity = "high",
                   .impact_ns = 50,
                   .recommendation = "r"});
    w.finish();
  }
  auto findings = Reader(path).findings();
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].rule, "b");
}

// The schema is the data contract: every column must say what it holds (docs/schema.md is
// generated from these comments).
TEST(Schema, EveryColumnHasADocComment) {
  std::istringstream in(schema_sql());
  bool in_table = false;
  int columns = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("CREATE TABLE", 0) == 0) {
      in_table = true;
      continue;
    }
    if (in_table && line.rfind(")", 0) == 0) {
      in_table = false;
      continue;
    }
    if (!in_table || line.find("PRIMARY KEY (") != std::string::npos ||
        line.find("UNIQUE (") != std::string::npos)
      continue;
    ++columns;
    EXPECT_NE(line.find("--"), std::string::npos) << "undocumented column: " << line;
  }
  EXPECT_GT(columns, 150);
}
