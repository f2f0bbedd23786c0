// Owning handle to one SQLite trace database: create, open, migrate, and the atomic-output
// protocol (write into a temporary file beside the target, rename on commit, remove on failure).
// This is the only place that calls sqlite3_open.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace fleetscope::store {

// RAII prepared statement with typed binds; thin on purpose.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind_null(int index);
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value
               ? bind(
                     index,
                     static_cast<
                         std::conditional_t<std::is_floating_point_v<T>, double,
                                            std::conditional_t<std::is_integral_v<T>, int64_t, T>>>(
                         *value))
               : bind_null(index);
  }
  bool step();     // true while a row is available
  void execute();  // step to completion, then reset
  void reset();
  void reset_keep_bindings();  // for hot loops that rebind every parameter anyway

  int64_t column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  bool column_is_null(int col) const;
  int column_count() const;
  std::string column_name(int col) const;
  sqlite3_stmt* raw() const { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

enum class OpenMode { read_only, read_write };

struct ConnectionMemo;  // src/connection_memo.h

class Database {
 public:
  // Opens an existing trace database, as untrusted input: SQLite's defensive mode, an untrusted
  // schema and no triggers. Read-write opens migrate an older schema in place; read-only opens
  // never write to the file: they read a migrated copy, made once per content of the file and
  // kept in the user's cache folder for every later connection and run (migrated_copy_folder();
  // a private copy for this connection alone where that folder cannot be written, and for files
  // under kMigratedCopyKeepMinBytes). A newer
  // schema_version than this build knows is refused with a message naming both versions.
  static Database open(const std::string& path, OpenMode mode = OpenMode::read_only);
  // Opens a SQLite file that is not a fleetscope database (e.g. an Nsight Systems export)
  // read-only, without schema checks or migration. Missing, empty and non-SQLite files are
  // InputErrors.
  static Database open_external(const std::string& path);
  // Creates a new, empty trace database at `path` (which must not exist), schema applied.
  static Database create(const std::string& path);
  // Creates a new, empty trace database in memory (SQLite's memdb VFS), schema applied: for
  // one-shot work that needs no file, such as analysing a trace file directly. It is private to
  // this process, reached only through this handle and another_connection(), and freed when its
  // last connection closes. path() is its memdb URI.
  static Database create_in_memory();

  // A new connection to the same database (a Writer and a Reader each need their own). For an
  // in-memory database this is the only way to reach it; for a file it is open(path(), mode).
  Database another_connection(OpenMode mode = OpenMode::read_write) const;
  bool in_memory() const { return in_memory_; }

  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql);
  Statement prepare(const std::string& sql) const { return Statement(db_, sql); }
  int schema_version() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() const { return db_; }
  void close();
  // What the store reuses on this connection while its file is unchanged (the range checks of
  // capture_rows_sql); the store's own.
  ConnectionMemo& memo() const { return *memo_; }

 private:
  friend struct DatabaseAccess;  // database.cpp: connections to copies, named after their file
  Database(sqlite3* db, std::string path, bool in_memory = false);
  sqlite3* db_ = nullptr;
  std::string path_;
  bool in_memory_ = false;
  std::unique_ptr<ConnectionMemo> memo_;
};

// One read transaction for a group of reads on a connection (a capture's load): every read sees
// the file as of the first, however often other connections commit meanwhile (a live host
// database), and what capture_rows_sql checks before a read is checked once for the group
// instead of before each read. Nothing when the connection is in a transaction already. The
// transaction ends with this object; while it lasts, a WAL file's checkpoints stop at it, so keep
// it to one load.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(const Database& db);
  ~ReadSnapshot();
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite3* db_ = nullptr;  // null: the connection was in a transaction already
};

// The file a connection reads (the path given to open(), also for a migrated in-memory copy), for
// error messages: every database error names its file.
std::string connection_path(const sqlite3* db);

// What a read-only open of an older schema does, for the programs' messages (the CLI's line on
// stderr, the GUI's status line and progress bar).
struct MigratedCopyNotice {
  enum class Stage {
    reading,  // once per file and content per process, before any copying
    copying,  // while a copy is made: `done` of `total` pages copied
    migrating,
  };
  Stage stage = Stage::reading;
  std::string path;        // the file as the user named it
  int schema_version = 0;  // the file's
  int64_t done = 0, total = 0;
  // "FILE is schema N; reading a migrated copy (fleetscope migrate FILE upgrades it once)"
  std::string line() const;
};
using MigratedCopyListener = std::function<void(const MigratedCopyNotice&)>;
// Process-wide; called on the thread that opens, so it must be thread-safe. Empty: none.
void set_migrated_copy_listener(MigratedCopyListener listener);
// The folder of kept migrated copies ($XDG_CACHE_HOME/fleetscope/migrated or
// ~/.cache/fleetscope/migrated), empty when this user has none to write.
std::string migrated_copy_folder();
// How many copies this process has made (kept or private): a copy made once is read by every
// later connection (tests count them).
uint64_t migrated_copies_made();
// Files smaller than this get a private copy per connection instead (a few tens of ms at most):
// the cache keeps no copy of every small file a test or a fuzzer makes.
inline constexpr uint64_t kMigratedCopyKeepMinBytes = uint64_t{16} << 20;
// The kept copies take at most this much together (the least recently used go first; the copy
// just made always stays).
inline constexpr uint64_t kMigratedCopiesMaxBytes = uint64_t{16} << 30;

// The schema DDL (generated from schema/tables.py) and the post-load indexes (schema/indexes.sql),
// compiled in.
const std::string& schema_sql();
const std::string& index_sql();
// The historical v1 schema (for migration tests and for reading files written by v1 builds).
const std::string& schema_v1_sql();

// Atomic output file: hands out a temporary path beside `final_path`; commit() renames it over the
// final path; destruction without commit() deletes the temporary file (and its -wal/-shm).
// Concurrent writers never lose an update silently: the constructor refuses while another live
// process has a temporary file for the same output, and with Replace::no commit() fails rather
// than replace a file that appeared meanwhile. The constructor also sweeps temporary files that
// dead processes left for the same output (SIGKILL), and remove_temporaries_on_signal() makes
// SIGINT/SIGTERM/SIGHUP/SIGQUIT delete the temporary files in progress before the process dies.
class AtomicOutput {
 public:
  enum class Replace { yes, no };
  explicit AtomicOutput(std::string final_path, Replace replace = Replace::yes);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;
  const std::string& temp_path() const { return temp_path_; }
  const std::string& final_path() const { return final_path_; }
  void commit();
  // Installs the signal handlers (only where the program has none of its own). Programs call this
  // once (the CLI does); a library loaded into someone else's process (the agent) does not.
  static void remove_temporaries_on_signal();

 private:
  struct FreeDeleter {
    void operator()(char* p) const;
  };
  std::string final_path_;
  std::string temp_path_;
  Replace replace_ = Replace::yes;
  std::unique_ptr<char, FreeDeleter> signal_copy_;  // what the signal handler unlinks
  bool committed_ = false;
};

}  // namespace fleetscope::store
