#include "fleetscope/store/query_stream.h"

#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <cstring>

#include "fleetscope/store/error.h"
#include "sqlite_errors.h"

namespace fleetscope::store {
namespace {

struct Deadline {
  std::chrono::steady_clock::time_point at;
  bool passed = false;
};

// SQLite calls this every kProgressOps virtual-machine instructions; non-zero interrupts the
// statement (SQLITE_INTERRUPT).
int check_deadline(void* context) {
  auto* deadline = static_cast<Deadline*>(context);
  if (std::chrono::steady_clock::now() < deadline->at) return 0;
  deadline->passed = true;
  return 1;
}
constexpr int kProgressOps = 10'000;

// Only whitespace and SQL comments may follow the statement.
bool only_comments(const char* tail) {
  const char* p = tail;
  while (*p) {
    if (std::isspace(static_cast<unsigned char>(*p)) || *p == ';') {
      ++p;
    } else if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') ++p;
    } else if (p[0] == '/' && p[1] == '*') {
      const char* end = std::strstr(p + 2, "*/");
      if (!end) return true;  // an unterminated comment runs to the end
      p = end + 2;
    } else {
      return false;
    }
  }
  return true;
}

struct ProgressGuard {
  sqlite3* db;
  ~ProgressGuard() { sqlite3_progress_handler(db, 0, nullptr, nullptr); }
};

struct StatementGuard {
  sqlite3_stmt* stmt = nullptr;
  ~StatementGuard() { sqlite3_finalize(stmt); }
};

}  // namespace

int64_t stream_query(const Database& db, const std::string& sql, const QueryLimits& limits,
                     const std::function<void(const std::vector<std::string>&)>& on_columns,
                     const std::function<void(const QueryRow&)>& on_row) {
  sqlite3* raw = db.raw();
  const std::string file = connection_path(raw);
  StatementGuard statement;
  const char* tail = nullptr;
  if (sqlite3_prepare_v2(raw, sql.c_str(), static_cast<int>(sql.size()), &statement.stmt, &tail) !=
      SQLITE_OK)
    throw InputError(file, "query", sqlite_error_message(raw));
  if (!statement.stmt) throw InputError(file, "query", "empty query, expected one statement");
  if (tail && !only_comments(tail))
    throw InputError(file, "query",
                     "more than one statement (the text after ';' would be ignored): run one "
                     "statement per call");
  if (!sqlite3_stmt_readonly(statement.stmt))
    throw InputError(file, "query", "only read-only statements are allowed");

  Deadline deadline;
  ProgressGuard progress{raw};
  if (limits.time_limit_s > 0) {
    deadline.at = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(limits.time_limit_s));
    sqlite3_progress_handler(raw, kProgressOps, check_deadline, &deadline);
  }

  const int columns = sqlite3_column_count(statement.stmt);
  std::vector<std::string> names;
  for (int c = 0; c < columns; ++c) {
    const char* name = sqlite3_column_name(statement.stmt, c);
    names.emplace_back(name ? name : "");
  }
  on_columns(names);
  QueryRow row(static_cast<size_t>(columns));
  int64_t count = 0;
  int rc;
  while ((rc = sqlite3_step(statement.stmt)) == SQLITE_ROW) {
    for (int c = 0; c < columns; ++c) {
      const unsigned char* text = sqlite3_column_text(statement.stmt, c);
      if (column_text_failed(statement.stmt, c, text))
        throw InputError(file, "query", sqlite_error_message(raw));
      if (text)
        row[c].emplace(reinterpret_cast<const char*>(text),
                       static_cast<size_t>(sqlite3_column_bytes(statement.stmt, c)));
      else
        row[c].reset();
    }
    on_row(row);
    ++count;
  }
  if (rc == SQLITE_DONE) return count;
  if (deadline.passed) throw InputError(file, "query", time_limit_text(limits.time_limit_s));
  throw InputError(file, "query", sqlite_error_message(raw));
}

}  // namespace fleetscope::store
