// Trace databases as untrusted input: read-only commands never write to the file they read,
// SQLite's defensive settings keep triggers in a file from running, `sql` takes one statement and
// stops at its time limit, every error on a corrupted database names the file (a corpus of
// corrupted copies generated here), out-of-range times are refused before any arithmetic, and an
// output file is never lost to a concurrent writer or left behind by a signal, and every reading
// command stops at its memory budget with the file named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli_run.h"
#include "fleetscope/cli/command.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/read_policy.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "raw_sql.h"
#include "sanitizers.h"
#include "temp_dir.h"

using namespace fleetscope;
namespace fs = std::filesystem;

namespace {

using test_support::CliRun;
CliRun run(const std::vector<std::string>& args) {
  return test_support::run_cli(args);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using fleetscope::test_support::raw_exec;

// A database with enough rows to span many pages, kernels launched by runtime calls.
std::string make_db(const test_support::TempDir& dir, const std::string& name = "t.db",
                    int kernels = 400) {
  const std::string path = dir.file(name);
  store::Writer w(store::Database::create(path));
  const int64_t cap = w.add_capture({.source = "kineto-json",
                                     .source_path = "x.json",
                                     .start_ns = 1000,
                                     .end_ns = 10'000'000,
                                     .gpu_vendor = "nvidia"});
  w.add_gpu({.id = 0, .captureId = cap, .name = "NVIDIA A100", .smCount = 108});
  for (int i = 0; i < kernels; ++i) {
    store::RuntimeCall c;
    c.start = 1000 + i * 10'000, c.end = c.start + 2000, c.correlationId = i + 1;
    c.name = "cudaLaunchKernel", c.captureId = cap, c.globalTid = store::global_tid(7, 7);
    w.add(c);
    store::Kernel k;
    k.start = c.start + 5000, k.end = k.start + 3000 + (i % 7) * 100, k.streamId = 7;
    k.correlationId = i + 1, k.demangledName = "kernel_" + std::to_string(i % 13);
    k.captureId = cap;
    w.add(k);
  }
  w.finish();
  return path;
}

}  // namespace

TEST(Untrusted, ReadOnlyCommandsNeverWriteAVersionOneFile) {
  test_support::TempDir dir;
  const std::string path = dir.file("v1.db");
  raw_exec(path, store::schema_v1_sql() +
                     "INSERT INTO meta VALUES ('schema_version', '1');"
                     "INSERT INTO captures(id, kind, source) VALUES (1, 'imported', 'old');"
                     "INSERT INTO StringIds VALUES (1, 'k');"
                     "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, "
                     "demangledName, shortName, captureId) VALUES (10, 5000, 0, 7, 1, 1, 1);");
  const std::string before = file_bytes(path);
  {
    store::Reader reader(path);
    EXPECT_EQ(reader.schema_version(), store::kSchemaVersion) << "migrated in memory";
    EXPECT_EQ(reader.kernels().size(), 1u);
  }
  CliRun sql = run({"sql", path, "SELECT COUNT(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL"});
  EXPECT_EQ(sql.code, 0) << sql.err;
  CliRun info = run({"info", path});
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_EQ(file_bytes(path), before) << "a read changed the file";
  EXPECT_FALSE(fs::exists(path + "-journal"));
  EXPECT_FALSE(fs::exists(path + "-wal"));

  CliRun migrate = run({"migrate", path});
  ASSERT_EQ(migrate.code, 0) << migrate.err;
  EXPECT_NE(migrate.out.find("schema_version 1 -> " + std::to_string(store::kSchemaVersion)),
            std::string::npos)
      << migrate.out;
  EXPECT_NE(file_bytes(path), before);
  EXPECT_EQ(store::Database::open_external(path).schema_version(), store::kSchemaVersion);
  CliRun again = run({"migrate", path});
  EXPECT_NE(again.out.find("already current"), std::string::npos) << again.out;
}

TEST(Untrusted, TriggersStoredInTheFileNeverRun) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "t.db", 3);
  raw_exec(
      path,
      "CREATE TABLE planted(x);"
      "CREATE TRIGGER on_finding AFTER INSERT ON findings BEGIN INSERT INTO planted VALUES (1); "
      "END;"
      "CREATE TRIGGER on_meta AFTER UPDATE ON meta BEGIN INSERT INTO planted VALUES (2); END;");
  EXPECT_EQ(run({"sql", path, "SELECT 1"}).code, 0);
  // A read-write open (analyze storing findings) refuses the file: fleetscope's schema has no
  // triggers, so one in a file was put there by someone else.
  EXPECT_THROW(store::Database::open(path, store::OpenMode::read_write), InputError);
  {
    // Even on a connection of its own (as `sql` opens it), the file's triggers are off.
    store::set_shape_checks(false);
    store::Database db = store::Database::open(path, store::OpenMode::read_write);
    store::set_shape_checks(true);
    db.exec(
        "INSERT INTO findings(captureId, rule, severity, evidence, recommendation, created_ns) "
        "VALUES (1, 'r', 'info', '{}', 'none', 0)");
  }
  CliRun count = run({"sql", "--format", "csv", path, "SELECT COUNT(*) FROM planted"});
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(count.out, "COUNT(*)\n0\n");
}

TEST(Untrusted, SqlOneStatementTimeLimitAndStreamedRows) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "t.db", 3);
  CliRun two = run({"sql", path, "SELECT 1; DELETE FROM captures"});
  EXPECT_EQ(two.code, 1);
  EXPECT_NE(two.err.find("more than one statement"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find(path), std::string::npos) << two.err;
  EXPECT_EQ(run({"sql", path, "SELECT 1; -- a comment\n"}).code, 0);

  const auto started = std::chrono::steady_clock::now();
  CliRun endless = run({"sql", "--timeout", "0.3", "--format", "csv", path,
                        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                        "SELECT x FROM c"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(endless.code, 1);
  EXPECT_NE(endless.err.find("query: stopped after the time limit of 0.3 s (raise it with "
                             "--timeout SECONDS, 0 for none)"),
            std::string::npos)
      << endless.err;  // the seconds as given (it said "0.300000 s")
  EXPECT_NE(endless.err.find(path), std::string::npos) << endless.err;
  EXPECT_LT(seconds, 10.0);
  // Rows were printed as they came, before the limit stopped the query.
  EXPECT_EQ(endless.out.rfind("x\n1\n2\n3\n", 0), 0u) << endless.out.substr(0, 40);

  CliRun json = run({"sql", "--format", "json", path, "SELECT id, source FROM captures"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out, "[\n  {\n    \"id\": \"1\",\n    \"source\": \"kineto-json\"\n  }\n]\n");
  EXPECT_EQ(run({"sql", "--format", "json", path, "SELECT 1 WHERE 0"}).out, "[]\n");
  EXPECT_EQ(run({"sql", "--timeout", "-1", path, "SELECT 1"}).code, 2);
}

// Copies of a valid database with bytes overwritten at random places (fixed seed): every command
// ends with exit 0 or 1, and every error names the file.
TEST(Untrusted, EveryErrorOnACorruptedDatabaseNamesTheFile) {
  test_support::TempDir dir;
  const std::string good = make_db(dir, "good.db", 400);
  const std::string bytes = file_bytes(good);
  ASSERT_GT(bytes.size(), 16384u);
  std::mt19937_64 random(15);
  int errors = 0, runs = 0;
  for (int n = 0; n < 60; ++n) {
    std::string copy = bytes;
    const int spots = 1 + static_cast<int>(random() % 8);
    for (int k = 0; k < spots; ++k) {
      // Half the corruptions hit the first pages (header, schema, root pages).
      const size_t limit = n % 2 ? copy.size() : std::min<size_t>(copy.size(), 8192 * 3);
      const size_t at = random() % limit;
      const size_t length = 1 + random() % 32;
      for (size_t b = at; b < std::min(copy.size(), at + length); ++b)
        copy[b] = static_cast<char>(random());
    }
    const std::string path = dir.file("corrupt-" + std::to_string(n) + ".db");
    std::ofstream(path, std::ios::binary) << copy;
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"info", path},
          {"sql", path, "SELECT COUNT(*), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"},
          {"analyze", "--no-store", path},
          {"export", path, "-o", dir.file("out-" + std::to_string(n) + ".json")}}) {
      CliRun r = run(args);
      ++runs;
      EXPECT_TRUE(r.code == 0 || r.code == 1) << args[0] << " on " << path << ": " << r.err;
      if (r.code != 0) {
        ++errors;
        EXPECT_NE(r.err.find(path), std::string::npos)
            << args[0] << " error does not name the file: " << r.err;
      }
    }
  }
  EXPECT_GT(errors, 20) << "the corpus should break most commands (" << runs << " runs)";
}

TEST(Untrusted, OutOfRangeTimesAreRefusedNamingTheFile) {
  test_support::TempDir dir;
  for (const std::string value : {"1e300", "-9223372036854775808", "9223372036854775807"}) {
    const std::string path = make_db(dir, "range-" + std::to_string(value.size()) + ".db", 5);
    raw_exec(path,
             "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = " + value + " WHERE correlationId = 3");
    CliRun analyze = run({"analyze", "--no-store", path});
    EXPECT_EQ(analyze.code, 1) << value << ": " << analyze.out;
    EXPECT_NE(analyze.err.find(path), std::string::npos) << analyze.err;
    // The loader refuses the value before any arithmetic: out of range, or (1e300 is stored as
    // REAL) not an integer at all.
    EXPECT_TRUE(analyze.err.find("out of range") != std::string::npos ||
                analyze.err.find("expected an integer") != std::string::npos)
        << analyze.err;
    CliRun exported = run({"export", path, "-o", dir.file("e.json")});
    EXPECT_EQ(exported.code, 1) << value;
    EXPECT_NE(exported.err.find(path), std::string::npos) << exported.err;
    EXPECT_FALSE(fs::exists(dir.file("e.json")));
  }
}

TEST(AtomicOutputSafety, ALiveWriterIsRefusedAndDeadTemporariesAreSwept) {
  test_support::TempDir dir;
  const std::string out = dir.file("out.db");
  // A live process "writing" the output: a child that waits.
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  const std::string live = out + ".tmp-" + std::to_string(child) + "-1";
  std::ofstream(live) << "partial";
  try {
    store::AtomicOutput refused(out);
    ADD_FAILURE() << "a second writer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another fleetscope process"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(out), std::string::npos);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // Now its temporary is a leftover of a dead process (as after SIGKILL): swept.
  { store::AtomicOutput fresh(out); }
  EXPECT_FALSE(fs::exists(live));
}

TEST(AtomicOutputSafety, WithoutReplaceAFileThatAppearedIsNotOverwritten) {
  test_support::TempDir dir;
  const std::string out = dir.file("out.db");
  store::AtomicOutput output(out, store::AtomicOutput::Replace::no);
  std::ofstream(output.temp_path()) << "mine";
  std::ofstream(out) << "theirs";  // another import finished first
  EXPECT_THROW(output.commit(), Error);
  EXPECT_EQ(file_bytes(out), "theirs");
}

// `import -o host.db --force` (or export/report -o) over a database another process has open
// (fleetscoped's host database) replaced it: the daemon went on writing into the unlinked file
// (everything it wrote after was lost) and its -wal/-shm were left beside the new file. The
// open connection is seen by the SQLite lock it holds, and the output is refused before any
// work, naming that process.
TEST(AtomicOutputSafety, ADatabaseOpenInAnotherProcessIsNotReplaced) {
  test_support::TempDir dir;
  const std::string db = make_db(dir, "host.db", 4);
  raw_exec(db, "PRAGMA journal_mode = WAL");
  const std::string before = file_bytes(db);
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // the daemon: a connection that has read the file, idle
    sqlite3* connection = nullptr;
    if (sqlite3_open(db.c_str(), &connection) != SQLITE_OK) _exit(3);
    if (sqlite3_exec(connection, "SELECT count(*) FROM meta", nullptr, nullptr, nullptr) !=
        SQLITE_OK)
      _exit(4);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(5);
    if (read(done[0], &byte, 1) < 0) _exit(6);  // until the test is done
    sqlite3_close(connection);
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  const std::string expected = "cannot write " + db +
                               ": it is a database open in another process (pid " +
                               std::to_string(holder) + ", e.g. fleetscoped)";
  try {
    store::AtomicOutput output(db);
    ADD_FAILURE() << "an output over an open database was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  const std::string trace = dir.file("t.json");
  std::ofstream(trace) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0,)"
                       << R"( "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})";
  const CliRun forced = run({"import", trace, "-o", db, "--force"});
  EXPECT_EQ(forced.code, 1);
  EXPECT_NE(forced.err.find(expected), std::string::npos) << forced.err;
  EXPECT_EQ(file_bytes(db), before);
  ASSERT_EQ(write(done[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);
  // Closed, it is replaced as before.
  EXPECT_EQ(run({"import", trace, "-o", db, "--force"}).code, 0);
}

TEST(AtomicOutputSafety, SigtermRemovesTheTemporaryFile) {
  for (int signal_number : {SIGTERM, SIGINT}) {
    test_support::TempDir dir;
    const std::string out = dir.file("out.db");
    const pid_t child = fork();
    if (child == 0) {
      // A shell starts a background job with SIGINT ignored, and the product rightly leaves an
      // ignored signal ignored: the test sets the default itself, so that it does not depend on
      // how it was started (it failed when run from a background job; ctest resets dispositions).
      ::signal(signal_number, SIG_DFL);
      store::AtomicOutput::remove_temporaries_on_signal();
      store::AtomicOutput output(out);
      std::ofstream(output.temp_path()) << "partial";
      std::ofstream(output.temp_path() + "-journal") << "journal";
      raise(signal_number);
      _exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status)) << "the signal still ends the process";
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), signal_number);
    }
    EXPECT_TRUE(fs::is_empty(dir.path())) << "temporary files left after signal " << signal_number;
  }
}

TEST(AtomicOutputSafety, AWriterThatHasNotCreatedItsFileYetAlreadyKeepsOthersOut) {
  test_support::TempDir dir;
  const std::string out = dir.file("out.db");
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  if (child == 0) {
    // `import --force` that has claimed the output and not yet created its temporary database.
    store::AtomicOutput first(out, store::AtomicOutput::Replace::yes);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    if (read(release[0], &byte, 1) != 1) _exit(2);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  try {
    store::AtomicOutput second(out, store::AtomicOutput::Replace::yes);
    ADD_FAILURE() << "two writers of one output at once: one result would be lost";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("another fleetscope process (pid " + std::to_string(child)),
        std::string::npos)
        << e.what();
  }
  ASSERT_EQ(write(release[1], &byte, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  { store::AtomicOutput after(out, store::AtomicOutput::Replace::yes); }  // the claim is gone
  for (int fd : {ready[0], ready[1], release[0], release[1]}) close(fd);
}

TEST(AtomicOutputSafety, ANewDatabaseIsNeverCreatedThroughALink) {
  test_support::TempDir dir;
  const std::string target = dir.file("elsewhere.db");
  const std::string link = dir.file("planted.db");
  fs::create_symlink(target, link);  // dangling: SQLite would create the target
  EXPECT_THROW(store::Database::create(link), Error);
  EXPECT_FALSE(fs::exists(target));
}

// Each file below is made by the test from a good database, changed the way a planted file would
// be: every reading command refuses it with the file named (none hangs or runs out of memory).
void expect_every_reader_refuses(const std::string& path, const std::string& what) {
  for (const std::vector<std::string>& command : {std::vector<std::string>{"info", path},
                                                  {"analyze", path},
                                                  {"export", path, "-o", path + ".json"},
                                                  {"report", path},
                                                  {"candidates", path}}) {
    CliRun result = run(command);
    EXPECT_EQ(result.code, 1) << command[0] << ": " << result.err;
    EXPECT_NE(result.err.find(path), std::string::npos) << command[0] << ": " << result.err;
    EXPECT_NE(result.err.find(what), std::string::npos) << command[0] << ": " << result.err;
  }
}

TEST(Untrusted, AViewInThePlaceOfATableIsRefusedNotRead) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "view.db", 3);
  // Endless rows: a recursive view where the kernels were.
  raw_exec(path,
           "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;"
           "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
           "SELECT n + 1 FROM r) SELECT n AS start, n + 1 AS end, 0 AS deviceId, 7 AS streamId, "
           "1 AS captureId FROM r;");
  expect_every_reader_refuses(path, "view CUPTI_ACTIVITY_KIND_KERNEL");
  // `sql` still shows the file as it is, within its own time limit.
  CliRun inspect =
      run({"sql", "--format", "csv", path,
           "SELECT type FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'"});
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_EQ(inspect.out, "type\nview\n");
}

TEST(Untrusted, ATriggerOrAWrongColumnTypeIsRefused) {
  test_support::TempDir dir;
  const std::string triggered = make_db(dir, "trigger.db", 3);
  raw_exec(triggered,
           "CREATE TABLE planted(x);"
           "CREATE TRIGGER on_finding AFTER INSERT ON findings BEGIN INSERT INTO planted VALUES "
           "(1); END;");
  expect_every_reader_refuses(triggered, "trigger on_finding");
  const std::string retyped = make_db(dir, "retyped.db", 3);
  raw_exec(retyped,
           "CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL;"
           "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;"
           "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start TEXT, end INTEGER, deviceId INTEGER, "
           "streamId INTEGER, captureId INTEGER);");
  expect_every_reader_refuses(retyped, "column start");
}

TEST(Untrusted, AHugeValueIsAnErrorNamingTheFileNotAnAllocation) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "huge.db", 3);
  // 80 MB of one string (SQLite builds it; the test never holds it).
  raw_exec(path,
           "UPDATE StringIds SET value = printf('%.*c', 80000000, 'x') WHERE id = "
           "(SELECT MIN(id) FROM StringIds);");
  store::Database db = store::Database::open(path);
  auto statement = db.prepare("SELECT value FROM StringIds ORDER BY length(value) DESC LIMIT 1");
  try {
    statement.step();
    ADD_FAILURE() << "an 80 MB value was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("too big"), std::string::npos) << e.what();
  }
}

TEST(Untrusted, ReadingCommandsStopAtTheirTimeBudget) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "slow.db", 20000);
  CliRun stopped = run({"analyze", "--timeout", "0.000001", path});
  EXPECT_EQ(stopped.code, 1) << stopped.err;
  EXPECT_NE(stopped.err.find(path), std::string::npos) << stopped.err;
  EXPECT_NE(stopped.err.find("--timeout"), std::string::npos) << stopped.err;
  CliRun bad = run({"info", "--timeout", "soon", path});
  EXPECT_EQ(bad.code, 2);
  CliRun normal = run({"info", path});
  EXPECT_EQ(normal.code, 0) << normal.err;
}

TEST(Untrusted, ExportRefusesWhatDoesNotFitAsAnalyzeDoes) {
  test_support::TempDir dir;
  for (const auto& [change, column] : std::vector<std::pair<std::string, std::string>>{
           {"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1099511627779", "deviceId"},
           {"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon'", "start"}}) {
    const std::string path = make_db(dir, column + ".db", 3);
    raw_exec(path, change);
    CliRun exported = run({"export", path, "-o", dir.file(column + ".json")});
    EXPECT_EQ(exported.code, 1) << column << ": " << exported.out;
    EXPECT_NE(exported.err.find(path), std::string::npos) << exported.err;
    EXPECT_NE(exported.err.find("column " + column), std::string::npos) << exported.err;
    CliRun analyzed = run({"analyze", path});
    EXPECT_EQ(analyzed.code, 1) << column;
  }
}

TEST(Untrusted, AVersionOneFileIsMigratedWithMemoryIndependentOfItsSize) {
  if (test_support::kUnderAddressSanitizer)
    GTEST_SKIP()
        << "AddressSanitizer's shadow memory and quarantine grow the peak RSS with the "
           "bytes SQLite touches, so the bound would measure the sanitizer; this test runs "
           "in the dev, quick and release builds";
  test_support::TempDir dir;
  const std::string path = dir.file("big-v1.db");
  // About 50 MB of v1 kernels, written by SQLite itself.
  raw_exec(path,
           store::schema_v1_sql() +
               "INSERT INTO meta VALUES ('schema_version', '1');"
               "INSERT INTO captures(id, kind, source) VALUES (1, 'imported', 'old');"
               "INSERT INTO StringIds VALUES (1, 'k');"
               "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r LIMIT 1200000) "
               "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, "
               "demangledName, shortName, captureId) SELECT n * 10, n * 10 + 5, 0, 7, 1, 1, "
               "1 FROM r;");
  ASSERT_GT(fs::file_size(path), 40u << 20);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  if (child == 0) {
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    int64_t kernels = 0;
    {
      store::Database db = store::Database::open(path);
      auto count = db.prepare("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
      count.step();
      kernels = count.column_int(0);
    }
    getrusage(RUSAGE_SELF, &after);
    const int64_t grown_kib = after.ru_maxrss - before.ru_maxrss;
    const int64_t sent[2] = {kernels, grown_kib};
    _exit(write(report[1], sent, sizeof sent) == sizeof sent ? 0 : 1);
  }
  int64_t got[2] = {0, 0};
  ASSERT_EQ(read(report[0], got, sizeof got), static_cast<ssize_t>(sizeof got));
  waitpid(child, nullptr, 0);
  close(report[0]);
  close(report[1]);
  EXPECT_EQ(got[0], 1200000);
  EXPECT_LT(got[1], 24 * 1024) << "peak RSS grew by " << got[1] << " KiB to migrate "
                               << fs::file_size(path) / 1024 << " KiB";
}

namespace {

// The `fleetscope` program in a process of its own (the memory budget is a limit of the whole
// process, and a test process keeps freed memory that would serve the command unseen).
CliRun run_program(const test_support::TempDir& dir, const std::vector<std::string>& args) {
  const std::string out_path = dir.file("program.out"), err_path = dir.file("program.err");
  const pid_t child = fork();
  if (child == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
    // Under AddressSanitizer (the asan preset) a refused allocation must return null, as malloc
    // does, rather than end the program.
    std::string asan = "allocator_may_return_null=1";
    if (const char* given = getenv("ASAN_OPTIONS"); given && *given) asan = given + (":" + asan);
    setenv("ASAN_OPTIONS", asan.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(FLEETSCOPE_CLI)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(FLEETSCOPE_CLI, argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), file_bytes(out_path),
          file_bytes(err_path)};
}

}  // namespace

TEST(Untrusted, EveryReadingCommandStopsAtItsMemoryBudgetNamingTheFile) {
  if (test_support::kUnderAddressSanitizer)
    GTEST_SKIP() << "AddressSanitizer's allocator and shadow memory do not fit an 8 MiB budget, so "
                    "the command would stop for the sanitizer's memory, not the file's; this test "
                    "runs in the dev, quick and release builds";
  test_support::TempDir dir;
  const std::string path = make_db(dir, "heavy.db", 3);
  const std::string other = make_db(dir, "light.db", 3);
  // A file that needs far more than an 8 MiB budget to read: a 24 MB kernel name and GPU name
  // (under the 64 MiB value cap), built by SQLite itself.
  raw_exec(path,
           "UPDATE StringIds SET value = printf('%.*c', 24000000, 'k') WHERE id = (SELECT "
           "demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1);"
           "UPDATE TARGET_INFO_GPU SET name = printf('%.*c', 24000000, 'g');");
  const std::string before = file_bytes(path);
  const std::string exported = dir.file("heavy.json");
  const std::vector<std::vector<std::string>> commands = {
      {"info", path},
      {"analyze", path},
      {"report", path},
      {"export", path, "-o", exported},
      {"fleet", path},
      {"diff", path, other},
      {"sql", path, "SELECT name FROM TARGET_INFO_GPU"}};
  for (auto args : commands) {
    args.insert(args.end(), {"--memory-limit", "8M"});
    const CliRun stopped = run_program(dir, args);
    EXPECT_EQ(stopped.code, 1) << args[0] << ": " << stopped.err;
    // One error line (after any progress lines): the file, the budget and how to raise it.
    std::vector<std::string> errors;
    std::istringstream lines(stopped.err);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("error: ", 0) == 0) errors.push_back(line);
    ASSERT_EQ(errors.size(), 1u) << args[0] << ": " << stopped.err;
    EXPECT_EQ(errors[0].rfind("error: " + path + ": ", 0), 0u) << errors[0];
    EXPECT_NE(errors[0].find("memory budget of 8 MiB"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("--memory-limit"), std::string::npos) << errors[0];
    // Nothing half-written: no export, no temporary beside it, the input untouched (analyze
    // stores its findings in it when it succeeds).
    EXPECT_FALSE(fs::exists(exported)) << args[0];
    for (const auto& entry : fs::directory_iterator(dir.path()))
      EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
    EXPECT_EQ(file_bytes(path), before) << args[0] << " changed its input";
  }
  // The same file within the default budget, and with none.
  for (auto args : commands) {
    if (args[0] == "export") fs::remove(exported);
    EXPECT_EQ(run_program(dir, args).code, 0) << args[0];
  }
  fs::remove(exported);
  // A trace file analysed in memory: the same one line, not "invalid JSON".
  const CliRun trace =
      run_program(dir, {"analyze", "--no-store",
                        std::string(FLEETSCOPE_SHARED_DATA) +
                            "/traces/kineto/hta-critical_path_alexnet_trace.json.gz",
                        "--memory-limit", "1M"});
  EXPECT_EQ(trace.code, 1) << trace.err;
  EXPECT_NE(trace.err.find("memory budget of 1 MiB"), std::string::npos) << trace.err;
  EXPECT_EQ(trace.err.find("invalid JSON"), std::string::npos) << trace.err;
  // Every reader of a trace file: a thread that cannot start within the budget is the budget too
  // (`export TRACE --memory-limit 1M` said only "error: Resource temporarily unavailable").
  const std::string json = std::string(FLEETSCOPE_SHARED_DATA) +
                           "/traces/kineto/hta-critical_path_simple_add_trace.json.gz";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"export", json, "-o", exported},
        {"info", json},
        {"fleet", json},
        {"candidates", json}}) {
    auto limited = args;
    limited.insert(limited.end(), {"--memory-limit", "1M"});
    const CliRun stopped = run_program(dir, limited);
    EXPECT_EQ(stopped.code, 1) << args[0] << ": " << stopped.err;
    EXPECT_NE(stopped.err.find("error: " + json +
                               ": out of memory within the memory budget of 1 "
                               "MiB"),
              std::string::npos)
        << args[0] << ": " << stopped.err;
    EXPECT_FALSE(fs::exists(exported)) << args[0];
  }
  EXPECT_EQ(run_program(dir, {"info", path, "--memory-limit", "0"}).code, 0);
  EXPECT_EQ(run_program(dir, {"info", path, "--memory-limit", "lots"}).code, 2);
  EXPECT_EQ(run_program(dir, {"info", path, "--memory-limit=100"}).code, 2);
}

TEST(Untrusted, NoControlCharacterFromAFileReachesTheTerminal) {
  test_support::TempDir dir;
  const std::string path = make_db(dir, "escapes.db", 40);
  const std::string plain = make_db(dir, "plain.db", 40);
  // Names that would set the window title and the colour of the terminal they are printed on.
  raw_exec(path,
           "UPDATE StringIds SET value = char(27) || ']0;owned' || char(7) || char(27) || '[31m' "
           "|| value;"
           "UPDATE TARGET_INFO_GPU SET name = char(27) || '[2J' || name;"
           "INSERT INTO workflows(id, name) VALUES (77, char(27) || '[31mjob');"
           "INSERT INTO processes(captureId, globalPid, pid, workflow_id, command) VALUES ("
           "(SELECT MIN(id) FROM captures), 7 * 16777216, 7, 77, char(27) || '[31mpython');");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"info", path},
                                             {"analyze", "--no-store", path},
                                             {"report", path},
                                             {"diff", path, plain},
                                             {"fleet", path},
                                             {"candidates", path}}) {
    const CliRun shown = run(args);
    EXPECT_EQ(shown.code, 0) << args[0] << ": " << shown.err;
    EXPECT_EQ(shown.out.find('\x1b'), std::string::npos) << args[0] << ":\n" << shown.out;
    EXPECT_EQ(shown.err.find('\x1b'), std::string::npos) << args[0] << ":\n" << shown.err;
  }
  // The escaped form is shown instead (the name stays recognisable).
  EXPECT_NE(run({"info", path}).out.find("\\x1B[2J"), std::string::npos);
  EXPECT_NE(run({"fleet", path}).out.find("\\x1B[31mjob"), std::string::npos)
      << run({"fleet", path}).out;
}
