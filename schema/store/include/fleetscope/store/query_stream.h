// One user-supplied SQL statement run on an untrusted trace database, row by row: the `sql`
// command's engine. Exactly one statement (a second one after ';' is an error, not silently
// ignored), read-only, stopped after a time limit (sqlite3_progress_handler), and streamed: rows go
// to the callback as SQLite produces them, so memory does not grow with the result.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/store/database.h"

namespace fleetscope::store {

struct QueryLimits {
  double time_limit_s = 60;  // wall-clock limit; 0 = none
};

using QueryRow = std::vector<std::optional<std::string>>;  // nullopt = SQL NULL

// Calls `on_columns` once with the column names, then `on_row` per row; returns the row count.
// Throws InputError naming the database file for a bad statement, a second statement, a writing
// statement, or the time limit; Error for other database failures (also naming the file).
int64_t stream_query(const Database& db, const std::string& sql, const QueryLimits& limits,
                     const std::function<void(const std::vector<std::string>&)>& on_columns,
                     const std::function<void(const QueryRow&)>& on_row);

}  // namespace fleetscope::store
