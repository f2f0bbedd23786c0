// Reading one column of a result row, for the store's generated read code (table_io.h) and
// reader.cpp: optional values, and times checked because files are untrusted.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"

namespace fleetscope::store::io {

// Times read back from a file are untrusted (a corrupted or hand-edited database): each must be
// an INTEGER within +-2^62 ns (+-146 years), so that differences and sums stay inside int64. A
// REAL such as 1e300, text, or INT64_MIN is an InputError naming the file, table and column.
inline int64_t checked_time(const Statement& s, int col, const char* table, const char* column) {
  const int type = sqlite3_column_type(s.raw(), col);
  const int64_t v = sqlite3_column_int64(s.raw(), col);
  constexpr int64_t kLimit = int64_t{1} << 62;
  if (type == SQLITE_INTEGER && v >= -kLimit && v <= kLimit) return v;
  const char* file = sqlite3_db_filename(sqlite3_db_handle(s.raw()), "main");
  std::string found = type == SQLITE_INTEGER ? std::to_string(v)
                      : type == SQLITE_FLOAT
                          ? "the real number " + std::to_string(sqlite3_column_double(s.raw(), col))
                      : type == SQLITE_NULL ? "NULL"
                      : type == SQLITE_TEXT ? "text"
                                            : "a blob";
  throw InputError(file && *file ? file : "(in-memory database)", std::string("table ") + table,
                   std::string("column ") + column + " is " + found +
                       ", expected an integer time in ns within +-2^62");
}

template <class T>
std::optional<T> opt(const Statement& s, int col) {
  if (s.column_is_null(col)) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>)
    return s.column_text(col);
  else if constexpr (std::is_floating_point_v<T>)
    return s.column_double(col);
  else
    return static_cast<T>(s.column_int(col));
}

}  // namespace fleetscope::store::io
