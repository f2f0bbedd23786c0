#include "fleetscope/store/database.h"

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "connection_memo.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/input_files.h"
#include "fleetscope/store/read_policy.h"
#include "fleetscope/store/rows.h"
#include "fleetscope/store/unreadable_file.h"
#include "migrated_copy.h"
#include "schema_shape.h"
#include "sqlite_errors.h"

namespace fleetscope::store {
namespace embedded {
extern const std::string trace_sql;
extern const std::string index_sql;
extern const std::string v1_sql;
extern const std::vector<std::string> migrations;  // [i]: schema version i + 1 -> i + 2
}  // namespace embedded

const std::string& schema_sql() {
  return embedded::trace_sql;
}
const std::string& index_sql() {
  return embedded::index_sql;
}
const std::string& schema_v1_sql() {
  return embedded::v1_sql;
}

// A connection to a copy, named after the file the user gave (in every error message).
struct DatabaseAccess {
  static Database adopt(sqlite3* db, const std::string& path) { return Database(db, path); }
};

namespace {

// The largest string or blob a connection to an opened (untrusted) file reads
// (SQLITE_LIMIT_LENGTH): a larger value is an error naming the file, not an allocation of its size.
constexpr int kMaxValueBytes = 64 << 20;

// The read budget (read_budget.h): a steady-clock deadline in ns, 0 = none.
std::atomic<int64_t> g_read_deadline_ns{0};
std::atomic<double> g_read_limit_s{0};
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int read_deadline_handler(void*) {
  const int64_t deadline = g_read_deadline_ns.load(std::memory_order_relaxed);
  return deadline != 0 && steady_ns() > deadline ? 1 : 0;
}
// SQLite calls the handler every this many virtual-machine steps (well under a millisecond).
constexpr int kReadBudgetSteps = 10000;
std::atomic<bool> g_shape_checks{true};

// The file behind each open connection, so that an error raised deep inside a statement still
// names the file the user gave (an in-memory copy of a migrated file has no file name of its own).
std::mutex& paths_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<const sqlite3*, std::string>& paths_by_connection() {
  static std::unordered_map<const sqlite3*, std::string> paths;
  return paths;
}
void remember_path(const sqlite3* db, const std::string& path) {
  std::lock_guard lock(paths_mutex());
  paths_by_connection()[db] = path;
}
void forget_path(const sqlite3* db) {
  std::lock_guard lock(paths_mutex());
  paths_by_connection().erase(db);
}

[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& what) {
  const std::string file = db ? connection_path(db) : std::string("(no database)");
  const std::string message = db ? sqlite3_errmsg(db) : "out of memory";
  const int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  if (code == SQLITE_INTERRUPT && read_time_limit_passed())
    throw InputError(file, "", what + ": " + time_limit_text(read_time_limit()));
  // SQLite's allocation refused by the reading command's memory budget (memory_budget.cpp).
  if (code == SQLITE_NOMEM && read_memory_limit() != 0)
    throw InputError(file, "", what + ": " + memory_budget_text());
  // A damaged file is bad input (exit 1 with the file named), not an internal error.
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_MISMATCH)
    throw InputError(file, "", what + ": " + message);
  throw Error(file + ": " + what + ": " + message);
}

void exec_or_throw(sqlite3* db, const std::string& sql, const std::string& context) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    const std::string file = connection_path(db);
    throw Error((context == file ? file : file + ": " + context) + ": " + text);
  }
}

// Reads schema_version; distinguishes "not SQLite" from "SQLite but not ours".
int read_schema_version(sqlite3* db, const std::string& path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &stmt,
                              nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    if (rc == SQLITE_NOTADB || message.find("not a database") != std::string::npos)
      throw unreadable_file(
          path, "not a fleetscope database (it holds " + common::describe_file_start(path) + ")");
    if (message.find("no such table") != std::string::npos)
      throw InputError(path, "table meta",
                       "not a fleetscope trace database (no 'meta' table with schema_version)");
    if (rc == SQLITE_CORRUPT) throw InputError(path, "", "corrupt SQLite database: " + message);
    throw InputError(path, "", "cannot read schema_version: " + message);
  }
  rc = sqlite3_step(stmt);
  std::string stored;
  if (rc == SQLITE_ROW) {
    const unsigned char* value = sqlite3_column_text(stmt, 0);
    // Bounded: the value is shown in the error below.
    if (value)
      stored.assign(reinterpret_cast<const char*>(value),
                    std::min<size_t>(static_cast<size_t>(sqlite3_column_bytes(stmt, 0)), 64));
  }
  std::string message = sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    throw InputError(path, "table meta", "corrupt SQLite database: " + message);
  if (rc == SQLITE_DONE) throw InputError(path, "table meta", "no schema_version row in 'meta'");
  // The whole text is the number: sqlite3_column_int read 'abc' as 0 ("no schema_version row")
  // and '3.5' as 3 (a migration that failed half-way with SQLite's own message).
  int version = 0;
  auto [end, ec] = std::from_chars(stored.data(), stored.data() + stored.size(), version);
  if (ec != std::errc() || end != stored.data() + stored.size() || version < 1)
    throw InputError(path, "table meta",
                     "schema_version is '" + text::terminal_safe(stored) +
                         "', expected a whole number from 1 (a fleetscope trace database)");
  return version;
}

// Every connection treats the file as untrusted (https://www.sqlite.org/security.html): defensive
// mode (no writable_schema, no raw page edits), the schema untrusted (functions with side effects
// never run from a view, trigger or index expression stored in the file), and triggers off
// entirely: fleetscope's schema has none, so a trigger in a file was put there by someone else,
// and it must not write a row when fleetscope inserts findings or migrates.
// Applied to files fleetscope opens, not to the ones it creates (defensive mode would also refuse
// the writer's journal_mode = OFF on its own temporary output).
void apply_untrusted_file_settings(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  exec_or_throw(db, "PRAGMA trusted_schema = OFF", "pragma");
  // No string or blob in a file may make a reader hold more than this at once (a planted row of
  // hundreds of MB would otherwise end in std::bad_alloc); SQLite answers SQLITE_TOOBIG instead.
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
}

void apply_connection_pragmas(sqlite3* db) {
  sqlite3_busy_timeout(db, 5000);
  exec_or_throw(db, "PRAGMA foreign_keys = OFF", "pragma");
}

// Applies the migrations from `version` to kSchemaVersion in one transaction.
void migrate(sqlite3* db, int version) {
  exec_or_throw(db, "BEGIN IMMEDIATE", "migrate");
  try {
    // Generated from schema/tables.py: the hand-written structural steps (migrations/) and the
    // ALTER TABLEs of columns added since the file's version.
    for (int from = version; from < kSchemaVersion; ++from)
      exec_or_throw(db, embedded::migrations.at(static_cast<size_t>(from - 1)),
                    "migrate from schema_version " + std::to_string(from));
    exec_or_throw(db,
                  "UPDATE meta SET value = '" + std::to_string(kSchemaVersion) +
                      "' WHERE key = 'schema_version'",
                  "migrate");
    exec_or_throw(db, "COMMIT", "migrate");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

// ---- Migrated copies ----
// A read-only open never writes to the file it reads, so an older schema is migrated on a copy
// (`fleetscope migrate` upgrades the file itself, once). The copy is made once per content of the
// file and kept in the user's cache folder (migrated_copy.h), where every later connection of
// this process and every later run reads it: the GUI opens several connections per file (loader,
// timeline, SQL console) and each made its own whole copy: 5.5 s to first paint for a 1.18 GB
// schema-5 file, 50-144 ms with the kept copy (docs/benchmarks.md "First paint of an
// older-schema file"). Where nothing can be kept, a private copy.

std::mutex& listener_mutex() {
  static std::mutex m;
  return m;
}
MigratedCopyListener& listener() {
  static MigratedCopyListener l;
  return l;
}
std::atomic<uint64_t> g_copies_made{0};

void notify(const MigratedCopyNotice& notice) {
  MigratedCopyListener l;
  {
    std::lock_guard lock(listener_mutex());
    l = listener();
  }
  if (l) l(notice);
}

// Tells the listener once per file and content in this process, before anything is copied.
void announce(const std::string& path, int version, const std::string& identity) {
  static std::mutex m;
  static std::unordered_map<std::string, bool> announced;
  {
    std::lock_guard lock(m);
    if (!announced.emplace(path + '\n' + identity, true).second) return;
  }
  MigratedCopyNotice notice;
  notice.path = path;
  notice.schema_version = version;
  notify(notice);
}

// Copies the database open on `file` into `target` in steps, telling the listener how far it
// is; SQLITE_DONE when whole.
int copy_database(sqlite3* target, sqlite3* file, const std::string& path, int version) {
  sqlite3_backup* backup = sqlite3_backup_init(target, "main", file, "main");
  if (!backup) return sqlite3_errcode(target);
  MigratedCopyNotice notice;
  notice.stage = MigratedCopyNotice::Stage::copying;
  notice.path = path;
  notice.schema_version = version;
  int rc = SQLITE_OK;
  // 4,096 pages a step (32 MiB of 8 KiB pages): a hundred and some steps for 10 M kernels.
  do {
    rc = sqlite3_backup_step(backup, 4096);
    notice.total = sqlite3_backup_pagecount(backup);
    notice.done = notice.total - sqlite3_backup_remaining(backup);
    if (rc == SQLITE_OK || rc == SQLITE_DONE) notify(notice);
  } while (rc == SQLITE_OK);
  sqlite3_backup_finish(backup);
  return rc;
}

// An error reading the file being copied is bad input; one writing the copy is not the file's.
bool source_error(int rc) {
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB || rc == SQLITE_INTERRUPT ||
         rc == SQLITE_NOMEM;
}

// Migrates a copy just made (open on `copy`, errors naming `path`) to the current schema.
void migrate_copy(sqlite3* copy, const std::string& path, int version) {
  apply_untrusted_file_settings(copy);
  apply_connection_pragmas(copy);
  if (g_read_deadline_ns.load() != 0)
    sqlite3_progress_handler(copy, kReadBudgetSteps, read_deadline_handler, nullptr);
  MigratedCopyNotice notice;
  notice.stage = MigratedCopyNotice::Stage::migrating;
  notice.path = path;
  notice.schema_version = version;
  notify(notice);
  migrate(copy, version);
  if (g_shape_checks) check_schema_shape(copy, path, /*check_types=*/true);
}

// A private copy for this connection alone: SQLite's private temporary on-disk database (an
// empty file name: deleted when the connection closes), so the memory it takes is its page cache
// (8 MiB here), whatever the size of the file: a copy in memory took 239 MB for `info` on a
// 225 MB v1 file.
Database private_copy(sqlite3* file, const std::string& path, int version) {
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2("", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    throw Error(path + ": cannot open a temporary copy to migrate it");
  }
  Database copy = DatabaseAccess::adopt(raw, path);
  copy.exec("PRAGMA cache_size = -8192");
  const int rc = copy_database(raw, file, path, version);
  if (rc != SQLITE_DONE)
    throw InputError(path, "",
                     "cannot copy the database to migrate it: " +
                         std::string(sqlite3_errmsg(source_error(rc) ? file : raw)));
  ++g_copies_made;
  migrate_copy(raw, path, version);
  copy.exec("PRAGMA query_only = ON");
  return copy;
}

// The mark a finished kept copy carries (its user_version): the low bits of its identity, set
// after the migration, so that a copy of other content or one cut short is never read as this.
int copy_mark(const std::string& identity) {
  return static_cast<int>(std::stoull(identity, nullptr, 16) & 0x7fffffff) | 1;
}

// The kept copy `entry` of `path`, or nothing when it is not a finished copy of this content.
std::optional<Database> open_kept_copy(const std::string& entry, const std::string& path,
                                       const std::string& identity) {
  if (!migrated_copy::entry_complete(entry)) return std::nullopt;
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(entry.c_str(), &raw,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(raw);
    return std::nullopt;
  }
  Database db = DatabaseAccess::adopt(raw, path);  // errors name the file the user gave
  try {
    apply_untrusted_file_settings(raw);
    apply_connection_pragmas(raw);
    if (g_read_deadline_ns.load() != 0)
      sqlite3_progress_handler(raw, kReadBudgetSteps, read_deadline_handler, nullptr);
    Statement mark(raw, "PRAGMA user_version");
    if (!mark.step() || mark.column_int(0) != copy_mark(identity)) return std::nullopt;
    if (read_schema_version(raw, path) != kSchemaVersion) return std::nullopt;
    if (g_shape_checks) check_schema_shape(raw, path, /*check_types=*/true);
    db.exec("PRAGMA query_only = ON");
  } catch (const Error&) {
    if (read_time_limit_passed()) throw;
    return std::nullopt;
  }
  migrated_copy::touch(entry);
  return db;
}

// Makes the kept copy `entry` of the database open on `file`: written under a temporary name
// beside it and renamed into place once migrated (AtomicOutput), so that no connection ever reads
// a half-made copy. Nothing when it cannot be written or the file changed while it was copied.
std::optional<Database> make_kept_copy(sqlite3* file, const std::string& path, int version,
                                       const std::string& identity, const std::string& entry,
                                       const std::string& folder) {
  std::error_code ec;
  std::filesystem::remove(entry, ec);  // not a finished copy of this content (open_kept_copy)
  AtomicOutput out(entry, AtomicOutput::Replace::no);
  {
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2(
            out.temp_path().c_str(), &raw,
            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
            nullptr) != SQLITE_OK) {
      sqlite3_close(raw);
      return std::nullopt;
    }
    Database copy = DatabaseAccess::adopt(raw, path);
    // Nothing to recover after a crash (the temporary is removed and made again): no syncs, the
    // journal in memory (defensive mode, set by migrate_copy, refuses to turn it off).
    copy.exec("PRAGMA journal_mode = MEMORY");
    copy.exec("PRAGMA synchronous = OFF");
    copy.exec("PRAGMA cache_size = -8192");
    const int rc = copy_database(raw, file, path, version);
    if (rc != SQLITE_DONE) {
      if (source_error(rc))
        throw InputError(
            path, "",
            "cannot copy the database to migrate it: " + std::string(sqlite3_errmsg(file)));
      return std::nullopt;  // the cache folder's disk is full, or cannot be written
    }
    if (migrated_copy::identity(path) != identity) return std::nullopt;  // changed meanwhile
    // The copy of a WAL file is a WAL file (the header is copied): a rollback-journal one is
    // read without -wal and -shm files beside it, which no cleanup would know to remove.
    copy.exec("PRAGMA journal_mode = DELETE");
    copy.exec("PRAGMA journal_mode = MEMORY");
    ++g_copies_made;
    migrate_copy(raw, path, version);
    copy.exec("PRAGMA user_version = " + std::to_string(copy_mark(identity)));
  }
  migrated_copy::note_source(entry, path);
  out.commit();
  migrated_copy::clean(folder, entry, kMigratedCopiesMaxBytes);
  return open_kept_copy(entry, path, identity);
}

// What a read-only open of an older schema reads: the kept copy of this content, made now when
// there is none; a private copy where none can be kept.
Database migrated_copy_of(sqlite3* file, const std::string& path, int version) {
  const std::optional<std::string> identity = migrated_copy::identity(path);
  announce(path, version, identity.value_or(""));
  std::error_code ec;
  const bool keep = identity && std::filesystem::file_size(path, ec) >= kMigratedCopyKeepMinBytes;
  const std::string folder = keep ? migrated_copy::folder() : std::string();
  if (!folder.empty()) {
    const std::string entry = migrated_copy::entry_path(folder, path, *identity);
    if (auto kept = open_kept_copy(entry, path, *identity)) return std::move(*kept);
    // One copy at a time: a connection or process that wants the same copy waits for it.
    migrated_copy::BuildLock lock(folder);
    if (auto kept = open_kept_copy(entry, path, *identity)) return std::move(*kept);
    try {
      if (auto made = make_kept_copy(file, path, version, *identity, entry, folder))
        return std::move(*made);
    } catch (const InputError&) {
      throw;  // the file itself (damaged, over the read budget)
    } catch (const Error&) {
      // The cache folder cannot take it (another writer, no space): a private copy.
    }
  }
  return private_copy(file, path, version);
}

}  // namespace

std::string MigratedCopyNotice::line() const {
  return path + " is schema " + std::to_string(schema_version) +
         "; reading a migrated copy (fleetscope migrate " + path + " upgrades it once)";
}
void set_migrated_copy_listener(MigratedCopyListener l) {
  std::lock_guard lock(listener_mutex());
  listener() = std::move(l);
}
std::string migrated_copy_folder() {
  return migrated_copy::folder();
}
uint64_t migrated_copies_made() {
  return g_copies_made.load();
}

std::string connection_path(const sqlite3* db) {
  {
    std::lock_guard lock(paths_mutex());
    auto it = paths_by_connection().find(db);
    if (it != paths_by_connection().end()) return it->second;
  }
  const char* name = sqlite3_db_filename(const_cast<sqlite3*>(db), "main");
  return name && *name ? std::string(name) : std::string("(in-memory database)");
}

void set_read_time_limit(double seconds) {
  g_read_limit_s = seconds > 0 ? seconds : 0;
  g_read_deadline_ns = seconds > 0 ? steady_ns() + static_cast<int64_t>(seconds * 1e9) : int64_t{0};
}
bool read_time_limit_passed() {
  const int64_t deadline = g_read_deadline_ns.load();
  return deadline != 0 && steady_ns() > deadline;
}
double read_time_limit() {
  return g_read_limit_s.load();
}
void set_shape_checks(bool on) {
  g_shape_checks = on;
}

// ---- Statement ----

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK)
    throw_sqlite(db, "prepare '" + sql.substr(0, 80) + "'");
}
Statement::~Statement() {
  sqlite3_finalize(stmt_);
}
Statement::Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}
Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, const std::string& value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}
bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite(db_, "step '" + std::string(sqlite3_sql(stmt_)).substr(0, 80) + "'");
}
void Statement::execute() {
  while (step()) {
  }
  reset();
}
void Statement::reset_keep_bindings() {
  sqlite3_reset(stmt_);
}
void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}
int64_t Statement::column_int(int col) const {
  return sqlite3_column_int64(stmt_, col);
}
double Statement::column_double(int col) const {
  return sqlite3_column_double(stmt_, col);
}
std::string Statement::column_text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (column_text_failed(stmt_, col, text))
    throw_sqlite(db_, "read column " + std::to_string(col) + " of '" +
                          std::string(sqlite3_sql(stmt_)).substr(0, 80) + "'");
  return text ? std::string(reinterpret_cast<const char*>(text),
                            static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
              : std::string();
}
bool Statement::column_is_null(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
int Statement::column_count() const {
  return sqlite3_column_count(stmt_);
}
std::string Statement::column_name(int col) const {
  return sqlite3_column_name(stmt_, col);
}

// ---- Database ----

Database Database::open(const std::string& path, OpenMode mode) {
  std::error_code ec;
  if (auto problem = common::input_problem(path, "a fleetscope database"))
    throw unreadable_file(path, *problem);
  if (std::filesystem::file_size(path, ec) == 0)
    throw InputError(path, "byte 0", "empty file, expected a SQLite trace database");
  note_reading(path);
  sqlite3* raw = nullptr;
  int flags = (mode == OpenMode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
              SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw InputError(path, "", "cannot open: " + message);
  }
  Database db(raw, path);
  apply_untrusted_file_settings(raw);
  apply_connection_pragmas(raw);
  // Views, virtual tables, generated columns or triggers where the schema has tables are refused
  // before any of them is read (meta included); declared types once the schema is current.
  if (g_read_deadline_ns.load() != 0)
    sqlite3_progress_handler(raw, kReadBudgetSteps, read_deadline_handler, nullptr);
  SchemaShape shape;
  if (g_shape_checks) shape = check_schema_shape(raw, path, /*check_types=*/false);
  int version = read_schema_version(raw, path);
  if (version > kSchemaVersion)
    throw InputError(path, "table meta",
                     "schema_version " + std::to_string(version) +
                         " is newer than this fleetscope supports (" +
                         std::to_string(kSchemaVersion) + "); upgrade fleetscope to read it");
  if (version < kSchemaVersion) {
    if (mode == OpenMode::read_only) {
      // A read never writes to the file it reads (migrated_copy_of).
      Database copy = migrated_copy_of(raw, path, version);
      db.close();
      return copy;
    }
    migrate(raw, version);
    if (g_shape_checks) check_schema_shape(raw, path, /*check_types=*/true);
  } else if (g_shape_checks) {
    check_declared_types(shape, path);  // current already: its shape as read above
  }
  if (mode == OpenMode::read_only) db.exec("PRAGMA query_only = ON");
  return db;
}

Database Database::open_external(const std::string& path) {
  std::error_code ec;
  if (auto problem = common::input_problem(path, "an SQLite database"))
    throw unreadable_file(path, *problem);
  if (std::filesystem::file_size(path, ec) == 0)
    throw InputError(path, "byte 0", "empty file, expected a SQLite database");
  note_reading(path);
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw InputError(path, "sqlite open", message);
  }
  Database db(raw, path);
  apply_untrusted_file_settings(raw);
  apply_connection_pragmas(raw);
  db.exec("PRAGMA query_only = ON");
  return db;
}

namespace {

// The schema and the meta rows every new trace database starts with, in one transaction.
void write_schema(Database& db) {
  db.exec("BEGIN");
  db.exec(schema_sql());
  db.exec("INSERT INTO meta(key, value) VALUES ('schema_version', '" +
          std::to_string(kSchemaVersion) + "'), ('writer', 'fleetscope'), ('writer_version', '" +
          std::string(FLEETSCOPE_STORE_VERSION) +
          "'), ('clock', 'CLOCK_REALTIME ns (CUPTI default timestamps)')");
  db.exec("COMMIT");
}

}  // namespace

Database Database::create(const std::string& path) {
  std::error_code ec;
  // symlink_status: a dangling link counts as existing (SQLite would create its target).
  if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found)
    throw Error(path + ": already exists, not overwriting");
  if (auto problem = common::output_problem(path))
    throw Error(common::cannot_write(path, *problem));
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(
          path.c_str(), &raw,
          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
          nullptr) != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw Error(path + ": cannot create: " + message);
  }
  Database db(raw, path);
  apply_connection_pragmas(raw);
  // Page size only takes effect before the first table exists and before WAL is enabled.
  db.exec("PRAGMA page_size = 8192");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  write_schema(db);
  return db;
}

namespace {

// Opens (creating on first use) the process-private memdb database named by `uri`. A name that
// starts with '/' is what makes memdb share one database between the connections of a process.
sqlite3* open_memdb(const std::string& uri, OpenMode mode) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
              (mode == OpenMode::read_only ? SQLITE_OPEN_READONLY
                                           : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(uri.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw Error(uri + ": cannot open the in-memory database: " + message);
  }
  apply_connection_pragmas(raw);
  return raw;
}

}  // namespace

Database Database::create_in_memory() {
  static std::atomic<uint64_t> counter{0};
  const std::string uri = "file:/fleetscope-memory-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter.fetch_add(1)) + "?vfs=memdb";
  Database db(open_memdb(uri, OpenMode::read_write), uri, /*in_memory=*/true);
  // Nothing to recover after a crash and no reader elsewhere: no journal, no syncs.
  db.exec("PRAGMA journal_mode = OFF");
  db.exec("PRAGMA synchronous = OFF");
  write_schema(db);
  return db;
}

Database Database::another_connection(OpenMode mode) const {
  if (!in_memory_) return open(path_, mode);
  if (!db_) throw Error(path_ + ": database is closed");
  Database db(open_memdb(path_, mode), path_, /*in_memory=*/true);
  if (mode == OpenMode::read_only) db.exec("PRAGMA query_only = ON");
  return db;
}

Database::~Database() {
  close();
}
Database::Database(Database&& other) noexcept
    : db_(other.db_),
      path_(std::move(other.path_)),
      in_memory_(other.in_memory_),
      memo_(std::move(other.memo_)) {
  other.db_ = nullptr;
}
Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    close();
    db_ = other.db_;
    path_ = std::move(other.path_);
    in_memory_ = other.in_memory_;
    memo_ = std::move(other.memo_);
    other.db_ = nullptr;
  }
  return *this;
}
void Database::exec(const std::string& sql) {
  if (memo_) ++memo_->execs;  // before: a statement that fails half-way may have changed things
  exec_or_throw(db_, sql, path_);
}
int Database::schema_version() const {
  return read_schema_version(db_, path_);
}
Database::Database(sqlite3* db, std::string path, bool in_memory)
    : db_(db),
      path_(std::move(path)),
      in_memory_(in_memory),
      memo_(std::make_unique<ConnectionMemo>()) {
  if (db_) remember_path(db_, path_);
}
void Database::close() {
  if (db_) {
    forget_path(db_);
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

ReadSnapshot::ReadSnapshot(const Database& db) {
  if (!db.raw() || !sqlite3_get_autocommit(db.raw())) return;
  // DEFERRED: no lock until the first read, which then holds its snapshot to the end.
  exec_or_throw(db.raw(), "BEGIN DEFERRED", db.path());
  db_ = db.raw();
}

ReadSnapshot::~ReadSnapshot() {
  if (!db_ || sqlite3_get_autocommit(db_)) return;  // none begun, or ended by an error already
  // It read only, so COMMIT only lets go of the snapshot; ROLLBACK where even that fails.
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

// ---- AtomicOutput ----

namespace {

// Temporary outputs in progress, for the signal handler: fixed slots of heap strings (the handler
// may only read them and call unlink, which is async-signal-safe).
constexpr size_t kSignalSlots = 64;
std::atomic<char*> g_pending_temp[kSignalSlots];

void register_temp(char* path) {
  for (auto& slot : g_pending_temp) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, path)) return;
  }
  // More than 64 outputs at once: this one is only removed by its destructor and the next sweep.
}

void unregister_temp(const char* path) {
  for (auto& slot : g_pending_temp) {
    char* expected = const_cast<char*>(path);
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

void remove_pending_on_signal(int signal_number) {
  char side[4096];
  for (auto& slot : g_pending_temp) {
    const char* path = slot.load();
    if (!path) continue;
    ::unlink(path);
    for (const char* suffix : {"-wal", "-shm", "-journal", ".claim"}) {
      size_t n = 0;
      for (; path[n] && n + 16 < sizeof side; ++n) side[n] = path[n];
      for (size_t k = 0; suffix[k]; ++k) side[n++] = suffix[k];
      side[n] = '\0';
      ::unlink(side);
    }
  }
  ::signal(signal_number, SIG_DFL);  // then die of the signal, as without the handler
  ::raise(signal_number);
}

bool process_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Temporary files of earlier runs for the same output: "<final>.tmp-<pid>-<n>" (plus SQLite side
// files). Those of dead processes are removed (a SIGKILLed import); a live one is another writer.
long sweep_and_find_live_writer(const std::string& final_path) {
  namespace fs = std::filesystem;
  const fs::path final_fs(final_path);
  const fs::path dir = final_fs.parent_path().empty() ? fs::path(".") : final_fs.parent_path();
  const std::string prefix = final_fs.filename().string() + ".tmp-";
  std::error_code ec;
  long live = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos) continue;
    long pid = 0;
    try {
      pid = std::stol(rest.substr(0, dash));
    } catch (const std::exception&) {
      continue;
    }
    if (pid == ::getpid()) continue;
    if (process_alive(pid)) {
      live = pid;
    } else {
      std::error_code remove_error;
      fs::remove(it->path(), remove_error);
    }
  }
  return live;
}

}  // namespace

void AtomicOutput::remove_temporaries_on_signal() {
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) != 0) continue;
    if (current.sa_handler != SIG_DFL) continue;  // the program has its own: leave it alone
    struct sigaction action {};
    action.sa_handler = remove_pending_on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND;
    ::sigaction(signal_number, &action, nullptr);
  }
}

namespace {

// The pid of another process with `path` open as a SQLite database, if one is seen: a WAL
// connection (fleetscoped's host database) holds a read lock on the file's SHARED range for as
// long as it is open, and any connection holds one while it reads (the locking protocol of the
// SQLite file format: https://www.sqlite.org/lockingv3.html, PENDING_BYTE 0x40000000 then
// RESERVED_BYTE and the 510-byte SHARED range in os_unix.c). F_GETLK only asks; it takes no lock.
std::optional<pid_t> database_open_elsewhere(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;  // absent, a link (the rename replaces the link), unreadable
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0x40000000;
  lock.l_len = 512;
  const bool asked = ::fcntl(fd, F_GETLK, &lock) == 0;
  ::close(fd);
  if (!asked || lock.l_type == F_UNLCK) return std::nullopt;
  return lock.l_pid;
}

}  // namespace

AtomicOutput::AtomicOutput(std::string final_path, Replace replace)
    : final_path_(std::move(final_path)), replace_(replace) {
  // Checked here, so that no error names the temporary file below.
  if (auto problem = common::output_problem(final_path_))
    throw Error(common::cannot_write(final_path_, *problem));
  if (auto input = input_file_at(final_path_))
    throw Error(common::cannot_write(
        final_path_, (*input == final_path_ ? "it is the input this command reads"
                                            : "it is the input " + *input + " (the same file)") +
                         "; expected another file for the output (the input would be lost)"));
  // Replaced, a database another process writes (fleetscoped) loses all that process writes
  // after: it goes on writing into the unlinked file, its -wal and -shm left beside the new one.
  if (auto holder = replace_ == Replace::yes ? database_open_elsewhere(final_path_) : std::nullopt)
    throw Error(common::cannot_write(
        final_path_, "it is a database open in another process (pid " + std::to_string(*holder) +
                         ", e.g. fleetscoped); replacing it would lose what that process "
                         "writes: expected another file for the output, or that process ended"));
  std::random_device rd;
  temp_path_ =
      final_path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 1000000);
  // Looking for another live writer and claiming the output must be one step: two processes
  // that both looked before either claimed would both write, and with --force both would
  // rename, one result silently lost. So both happen under an exclusive lock on the folder
  // (flock(2), held for these few system calls only), and the claim is a file the next writer's
  // look finds: the temporary name plus ".claim", created exclusively, never through a link.
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(final_path_).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) ::flock(folder_fd, LOCK_EX);
  const long other = sweep_and_find_live_writer(final_path_);
  int claim = -1;
  if (!other)
    claim = ::open((temp_path_ + ".claim").c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  const int claim_error = errno;
  if (folder_fd >= 0) ::close(folder_fd);  // releases the lock
  if (other)
    throw Error(final_path_ + ": another fleetscope process (pid " + std::to_string(other) +
                ") is writing this file; wait for it to finish (two writers would lose one "
                "result)");
  if (claim < 0)
    throw Error(temp_path_ +
                ".claim: cannot create the output's claim: " + std::strerror(claim_error));
  ::close(claim);
  signal_copy_.reset(::strdup(temp_path_.c_str()));
  if (signal_copy_) register_temp(signal_copy_.get());
}

void AtomicOutput::FreeDeleter::operator()(char* p) const {
  ::free(p);
}

AtomicOutput::~AtomicOutput() {
  if (signal_copy_) unregister_temp(signal_copy_.get());
  std::error_code ec;
  std::filesystem::remove(temp_path_ + ".claim", ec);
  if (committed_) return;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(temp_path_ + suffix, ec);
}

void AtomicOutput::commit() {
  std::error_code ec;
  // A WAL database must be closed (checkpointed) by its owner before commit(); stray side files
  // would otherwise be orphaned by the rename.
  // Make the content durable before it becomes visible under the final name, then make the
  // rename itself durable.
  auto sync_path = [](const std::string& p, int flags) {
    int fd = ::open(p.c_str(), flags);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  };
  sync_path(temp_path_, O_RDONLY);
  if (replace_ == Replace::no) {
    // Without permission to replace, a file that appeared while we wrote (another writer) is
    // never overwritten: renameat2(RENAME_NOREPLACE) fails instead (Linux >= 3.15).
    if (::syscall(SYS_renameat2, AT_FDCWD, temp_path_.c_str(), AT_FDCWD, final_path_.c_str(),
                  1u /* RENAME_NOREPLACE */) != 0) {
      const int error = errno;
      if (error == EEXIST)
        throw Error(final_path_ +
                    ": appeared while this output was being written (another writer?); not "
                    "replacing it (use --force to replace it)");
      ec = std::error_code(error, std::generic_category());
    }
  } else {
    std::filesystem::rename(temp_path_, final_path_, ec);
  }
  if (!ec) {
    std::string dir = std::filesystem::path(final_path_).parent_path().string();
    sync_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
  }
  if (ec)
    throw Error(final_path_ + ": cannot move the finished output into place: " + ec.message());
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(temp_path_ + suffix, ec);
  committed_ = true;
}

}  // namespace fleetscope::store
