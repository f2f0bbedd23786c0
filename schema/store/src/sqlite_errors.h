// SQLite's errors as the reading commands report them (memory_budget.cpp).
#pragma once

#include <sqlite3.h>

#include <string>

namespace fleetscope::store {

// The message of the last error on `db`; when SQLite ran out of memory within the reading
// command's memory budget, the budget and how to raise it.
std::string sqlite_error_message(sqlite3* db);

// "stopped after the time limit of 0.3 s (raise it with --timeout SECONDS, 0 for none)", in the
// words of both places that stop a statement at the --timeout budget (the seconds as given: it
// said "0.300000 s").
std::string time_limit_text(double seconds);

// sqlite3_column_text answers a null pointer both for NULL and for a value it could not allocate:
// true for the second (the caller throws rather than read the value as NULL or "").
inline bool column_text_failed(sqlite3_stmt* stmt, int col, const unsigned char* text) {
  return text == nullptr && sqlite3_column_type(stmt, col) != SQLITE_NULL;
}

}  // namespace fleetscope::store
