// A read-only open of an older schema reads a copy migrated once per content of the file and kept
// in the user's cache folder (Database::open, schema/store/src/migrated_copy.h): one copy for
// every connection, made again when the file changes, never a half-made one, and a private copy
// where the cache folder cannot be written.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "raw_sql.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace fleetscope;
using namespace fleetscope::store;

namespace {

// XDG_CACHE_HOME pointed at a folder of the test for its lifetime.
class CacheHome {
 public:
  explicit CacheHome(const std::string& path) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old;
    ::setenv("XDG_CACHE_HOME", path.c_str(), 1);
  }
  ~CacheHome() {
    if (old_.empty())
      ::unsetenv("XDG_CACHE_HOME");
    else
      ::setenv("XDG_CACHE_HOME", old_.c_str(), 1);
  }

 private:
  std::string old_;
};

using fleetscope::test_support::raw_exec;

// A schema-5 file (schema 6 changed no table: today's DDL with schema_version 5, as
// commands_test makes them) of `kernels` kernels, padded past kMigratedCopyKeepMinBytes (a
// smaller file gets a private copy per connection).
std::string schema_five_file(const test_support::TempDir& dir, bool wal = false, int kernels = 3) {
  const std::string path = dir.file("old.db");
  {
    Writer w(Database::create(path));
    const int64_t capture = w.add_capture({.source = "old"});
    for (int i = 0; i < kernels; ++i) {
      Kernel k;
      k.start = 1000 * (i + 1);
      k.end = k.start + 500;
      k.streamId = 7;
      k.demangledName = "k";
      k.captureId = capture;
      w.add(k);
    }
    w.finish();
  }
  raw_exec(path, std::string(wal ? "PRAGMA journal_mode = WAL;" : "") +
                     "UPDATE meta SET value = '5' WHERE key = 'schema_version';"
                     "CREATE TABLE padding(b BLOB);"
                     "INSERT INTO padding VALUES (zeroblob(" +
                     std::to_string(kMigratedCopyKeepMinBytes + (1 << 20)) + "));");
  return path;
}

std::vector<fs::path> kept_copies(const std::string& folder) {
  std::vector<fs::path> copies;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.path().extension() == ".db") copies.push_back(entry.path());
  return copies;
}

int64_t kernel_count(const Reader& reader) {
  return static_cast<int64_t>(reader.kernels(EventFilter{}).size());
}

}  // namespace

TEST(MigratedCopy, TwoConnectionsReadOneCopy) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string path = schema_five_file(dir, /*wal=*/true);
  std::mutex m;
  int readings = 0, copying = 0;
  std::string line;
  set_migrated_copy_listener([&](const MigratedCopyNotice& n) {
    std::lock_guard lock(m);
    if (n.stage == MigratedCopyNotice::Stage::reading) {
      ++readings;
      line = n.line();
    }
    if (n.stage == MigratedCopyNotice::Stage::copying) ++copying;
  });
  const uint64_t before = migrated_copies_made();
  {
    Reader a(path);
    Reader b(path);
    EXPECT_EQ(a.schema_version(), kSchemaVersion);
    EXPECT_EQ(b.schema_version(), kSchemaVersion);
    EXPECT_EQ(kernel_count(a), 3);
    EXPECT_EQ(kernel_count(b), 3);
  }
  // Two connections at once on other threads (the GUI's loader and SQL console) read it too.
  std::vector<std::thread> threads;
  std::atomic<int> read_ok{0};
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&] {
      Reader r(path);
      if (kernel_count(r) == 3) ++read_ok;
    });
  for (auto& t : threads) t.join();
  set_migrated_copy_listener({});
  EXPECT_EQ(read_ok.load(), 2);
  EXPECT_EQ(migrated_copies_made() - before, 1u);
  const auto copies = kept_copies(migrated_copy_folder());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(readings, 1) << "the line is said once per file";
  // The file is a WAL file; its copy is read without -wal and -shm beside it.
  std::ifstream header(copies[0], std::ios::binary);
  char bytes[20] = {};
  header.read(bytes, sizeof bytes);
  EXPECT_EQ(bytes[18], 1) << "a rollback-journal file";
  EXPECT_EQ(std::distance(fs::directory_iterator(migrated_copy_folder()), fs::directory_iterator()),
            3)
      << "the copy, its .source note and the build lock";
  EXPECT_GT(copying, 0);
  EXPECT_EQ(line, path + " is schema 5; reading a migrated copy (fleetscope migrate " + path +
                      " upgrades it once)");
  // The file itself is never written.
  EXPECT_EQ(Database::open_external(path).schema_version(), 5);
  EXPECT_EQ(migrated_copy_folder(), dir.file("cache") + "/fleetscope/migrated");
}

TEST(MigratedCopy, AChangedFileIsMigratedAgain) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string path = schema_five_file(dir);
  const uint64_t before = migrated_copies_made();
  EXPECT_EQ(kernel_count(Reader(path)), 3);
  raw_exec(path,
           "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, demangledName, "
           "shortName, captureId) SELECT 9000, 9500, 0, 7, demangledName, shortName, captureId "
           "FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1");
  EXPECT_EQ(kernel_count(Reader(path)), 4);
  EXPECT_EQ(migrated_copies_made() - before, 2u);
  EXPECT_EQ(kept_copies(migrated_copy_folder()).size(), 1u) << "the stale copy is removed";
  EXPECT_EQ(kernel_count(Reader(path)), 4);
  EXPECT_EQ(migrated_copies_made() - before, 2u);
}

TEST(MigratedCopy, AHalfWrittenCopyIsNeverRead) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string path = schema_five_file(dir);
  const uint64_t before = migrated_copies_made();
  EXPECT_EQ(kernel_count(Reader(path)), 3);
  const auto copies = kept_copies(migrated_copy_folder());
  ASSERT_EQ(copies.size(), 1u);
  const fs::path entry = copies[0];
  // Cut short (a copy whose writer died, had it been renamed early): made again.
  fs::resize_file(entry, fs::file_size(entry) / 2);
  EXPECT_EQ(kernel_count(Reader(path)), 3);
  EXPECT_EQ(migrated_copies_made() - before, 2u);
  EXPECT_GT(fs::file_size(entry), fs::file_size(path) / 2);
  // Whole but not a finished copy of this content (no mark: a copy of the file as it is, not
  // migrated): made again, not read.
  fs::remove(entry);
  fs::copy_file(path, entry);
  EXPECT_EQ(Reader(path).schema_version(), kSchemaVersion);
  EXPECT_EQ(migrated_copies_made() - before, 3u);
  // What a writer that died left under its temporary name is never taken for the copy (and is
  // removed when the copy is made).
  const uint64_t size = fs::file_size(entry);
  const std::string left = entry.string() + ".tmp-999999999-1";
  fs::rename(entry, left);
  EXPECT_EQ(kernel_count(Reader(path)), 3);
  EXPECT_EQ(migrated_copies_made() - before, 4u);
  EXPECT_EQ(fs::file_size(entry), size);
  EXPECT_FALSE(fs::exists(left));
}

TEST(MigratedCopy, AReadOnlyCacheFolderFallsBackToAPrivateCopy) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string folder = dir.file("cache") + "/fleetscope/migrated";
  fs::create_directories(folder);
  ASSERT_EQ(::chmod(folder.c_str(), 0500), 0);
  const std::string path = schema_five_file(dir);
  const uint64_t before = migrated_copies_made();
  {
    Reader a(path);
    Reader b(path);
    EXPECT_EQ(kernel_count(a), 3);
    EXPECT_EQ(kernel_count(b), 3);
  }
  EXPECT_EQ(migrated_copies_made() - before, 2u) << "one private copy per connection";
  EXPECT_EQ(migrated_copy_folder(), "");
  ::chmod(folder.c_str(), 0700);
  EXPECT_TRUE(kept_copies(folder).empty());
}

TEST(MigratedCopy, ASmallFileGetsAPrivateCopy) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string path = dir.file("small.db");
  {
    Writer w(Database::create(path));
    w.add_capture({.source = "small"});
    w.finish();
  }
  raw_exec(path, "UPDATE meta SET value = '5' WHERE key = 'schema_version'");
  const uint64_t before = migrated_copies_made();
  EXPECT_EQ(Reader(path).schema_version(), kSchemaVersion);
  EXPECT_EQ(Reader(path).schema_version(), kSchemaVersion);
  EXPECT_EQ(migrated_copies_made() - before, 2u);
  EXPECT_TRUE(kept_copies(dir.file("cache") + "/fleetscope/migrated").empty());
}

// The copy of a file that is gone (a test's temporary folder) goes when the next copy is made.
TEST(MigratedCopy, TheCopyOfARemovedFileIsRemoved) {
  test_support::TempDir cache;
  CacheHome home(cache.file("cache"));
  {
    test_support::TempDir dir;
    Reader reader(schema_five_file(dir));
  }
  EXPECT_EQ(kept_copies(migrated_copy_folder()).size(), 1u);
  test_support::TempDir dir;
  EXPECT_EQ(kernel_count(Reader(schema_five_file(dir))), 3);
  const auto copies = kept_copies(migrated_copy_folder());
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_NE(copies[0].filename().string().find("old.db"), std::string::npos);
  EXPECT_EQ(std::distance(fs::directory_iterator(migrated_copy_folder()), fs::directory_iterator()),
            3)
      << "the copy, its .source note and the build lock";
}

// The `fleetscope` program says once on stderr that it reads a migrated copy, and a later run
// reads the copy the first one kept.
TEST(MigratedCopy, TheProgramSaysSoOnceAndALaterRunReadsTheKeptCopy) {
  test_support::TempDir dir;
  CacheHome home(dir.file("cache"));
  const std::string path = schema_five_file(dir);
  auto stderr_of = [&](const std::string& args) {
    const std::string command = std::string(FLEETSCOPE_CLI) + " " + args + " 2>&1 >/dev/null";
    std::string err;
    if (FILE* p = ::popen(command.c_str(), "r")) {
      char buffer[4096];
      for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) err.append(buffer, n);
      ::pclose(p);
    }
    return err;
  };
  const std::string line = path + " is schema 5; reading a migrated copy (fleetscope migrate " +
                           path + " upgrades it once)\n";
  EXPECT_EQ(stderr_of("info " + path), line);
  const auto copies = kept_copies(migrated_copy_folder());
  ASSERT_EQ(copies.size(), 1u);
  struct stat first {};
  ASSERT_EQ(::stat(copies[0].c_str(), &first), 0);
  // analyze opens the file more than once; the line comes once, first.
  const std::string analyzed = stderr_of("analyze " + path + " --no-store");
  EXPECT_EQ(analyzed.rfind(line, 0), 0u) << analyzed;
  EXPECT_EQ(analyzed.find(line, 1), std::string::npos) << analyzed;
  struct stat second {};
  ASSERT_EQ(::stat(copies[0].c_str(), &second), 0);
  EXPECT_EQ(first.st_ino, second.st_ino) << "the second run made no copy of its own";
}
