#include "fleetscope/store/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>

#include "fleetscope/store/error.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::store {
namespace embedded {
extern const std::string trace_sql;
extern const std::string index_sql;
extern const std::string v1_sql;
extern const std::string v1_to_v2_sql;
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

namespace {

// Migrations: entry i upgrades schema version i+1 to i+2.
struct Migration {
  int from;
  const std::string* sql;
};
const Migration kMigrations[] = {{1, &embedded::v1_to_v2_sql}};

[[noreturn]] void throw_sqlite(sqlite3* db, const std::string& what) {
  throw Error(what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

void exec_or_throw(sqlite3* db, const std::string& sql, const std::string& context) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw Error(context + ": " + text);
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
      throw InputError(path, "byte 0",
                       "not a SQLite database (file header is not 'SQLite format 3')");
    if (message.find("no such table") != std::string::npos)
      throw InputError(path, "table meta",
                       "not a fleetscope trace database (no 'meta' table with schema_version)");
    if (rc == SQLITE_CORRUPT) throw InputError(path, "", "corrupt SQLite database: " + message);
    throw InputError(path, "", "cannot read schema_version: " + message);
  }
  int version = -1;
  rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) version = sqlite3_column_int(stmt, 0);
  std::string message = sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    throw InputError(path, "table meta", "corrupt SQLite database: " + message);
  if (version < 1) throw InputError(path, "table meta", "no schema_version row in 'meta'");
  return version;
}

void apply_connection_pragmas(sqlite3* db) {
  sqlite3_busy_timeout(db, 5000);
  exec_or_throw(db, "PRAGMA foreign_keys = OFF", "pragma");
}

}  // namespace

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
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "no such file");
  if (std::filesystem::file_size(path, ec) == 0)
    throw InputError(path, "byte 0", "empty file, expected a SQLite trace database");
  sqlite3* raw = nullptr;
  int flags = (mode == OpenMode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
              SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &raw, flags, nullptr) != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw InputError(path, "", "cannot open: " + message);
  }
  Database db(raw, path);
  apply_connection_pragmas(raw);
  int version = read_schema_version(raw, path);
  if (version > kSchemaVersion)
    throw InputError(path, "table meta",
                     "schema_version " + std::to_string(version) +
                         " is newer than this fleetscope supports (" +
                         std::to_string(kSchemaVersion) + "); upgrade fleetscope to read it");
  if (version < kSchemaVersion) {
    if (mode == OpenMode::read_only) {
      // Upgrade in place once through a read-write connection, then read as asked.
      db.close();
      try {
        open(path, OpenMode::read_write);
      } catch (const InputError&) {
        throw;
      } catch (const Error& e) {
        throw InputError(path, "table meta",
                         "schema_version " + std::to_string(version) + " needs migrating to " +
                             std::to_string(kSchemaVersion) + " but the file is not writable (" +
                             e.what() + ")");
      }
      return open(path, OpenMode::read_only);
    }
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const Migration& m : kMigrations) {
        if (m.from < version) continue;
        db.exec(*m.sql);
        version = m.from + 1;
      }
      db.exec("UPDATE meta SET value = '" + std::to_string(kSchemaVersion) +
              "' WHERE key = 'schema_version'");
      db.exec("COMMIT");
    } catch (...) {
      sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  if (mode == OpenMode::read_only) db.exec("PRAGMA query_only = ON");
  return db;
}

Database Database::open_external(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path, "", "no such file");
  if (std::filesystem::file_size(path, ec) == 0)
    throw InputError(path, "byte 0", "empty file, expected a SQLite database");
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw InputError(path, "sqlite open", message);
  }
  return Database(raw, path);
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
  if (std::filesystem::exists(path, ec)) throw Error(path + ": already exists, not overwriting");
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
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
    : db_(other.db_), path_(std::move(other.path_)), in_memory_(other.in_memory_) {
  other.db_ = nullptr;
}
Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    close();
    db_ = other.db_;
    path_ = std::move(other.path_);
    in_memory_ = other.in_memory_;
    other.db_ = nullptr;
  }
  return *this;
}
void Database::exec(const std::string& sql) {
  exec_or_throw(db_, sql, path_);
}
int Database::schema_version() const {
  return read_schema_version(db_, path_);
}
void Database::close() {
  if (db_) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

// ---- AtomicOutput ----

AtomicOutput::AtomicOutput(std::string final_path) : final_path_(std::move(final_path)) {
  std::random_device rd;
  temp_path_ =
      final_path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 1000000);
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  std::error_code ec;
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
  std::filesystem::rename(temp_path_, final_path_, ec);
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
