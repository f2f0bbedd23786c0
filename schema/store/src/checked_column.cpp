#include "fleetscope/store/checked_column.h"

#include <sqlite3.h>

#include <cstdio>

#include "fleetscope/store/error.h"

namespace fleetscope::store {

int64_t checked_int(const Statement& stmt, int column, const std::string& path, const char* table,
                    int64_t row, const char* name, int64_t lo, int64_t hi,
                    std::optional<int64_t> null_value) {
  const int type = sqlite3_column_type(stmt.raw(), column);
  auto bad = [&](const std::string& what) {
    const std::string file = path.empty() ? connection_path(sqlite3_db_handle(stmt.raw())) : path;
    throw InputError(
        file, std::string("table ") + table + (row >= 0 ? " row " + std::to_string(row) : ""),
        std::string("column ") + name + " " + what);
  };
  if (type == SQLITE_NULL) {
    if (null_value) return *null_value;
    bad("is NULL, expected an integer");
  }
  if (type == SQLITE_FLOAT) {
    // %g: a value like 1e300 stays short in the message (std::to_string prints every digit).
    char value[32];
    std::snprintf(value, sizeof value, "%g", sqlite3_column_double(stmt.raw(), column));
    bad(std::string("is a real number (") + value + "), expected an integer");
  }
  if (type != SQLITE_INTEGER)
    bad(std::string("is ") + (type == SQLITE_TEXT ? "text" : "a blob") + ", expected an integer");
  const int64_t v = sqlite3_column_int64(stmt.raw(), column);
  if (v < lo || v > hi)
    bad("is " + std::to_string(v) + ", out of range [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  return v;
}

int64_t checked_time(const Statement& stmt, int column, const std::string& path, const char* table,
                     int64_t row, const char* name) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  return checked_int(stmt, column, path, table, row, name, -kLimit, kLimit);
}

}  // namespace fleetscope::store
