// Values read back from a trace database are untrusted (a corrupted, hand-edited or planted file):
// each is checked before it is used or narrowed, and a bad one is an InputError naming the file,
// the table, the row and the column. Every reader that narrows a column (the analyzer's loader,
// the Chrome-trace export) calls these, so a file is refused the same way by all of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/store/database.h"

namespace fleetscope::store {

// An INTEGER (not a REAL, text or blob) in [lo, hi]; NULL only when `null_value` is given.
// `path` empty: the file of the statement's connection. `row` < 0: no row number in the message.
int64_t checked_int(const Statement& stmt, int column, const std::string& path, const char* table,
                    int64_t row, const char* name, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX,
                    std::optional<int64_t> null_value = std::nullopt);
// An INTEGER time within +-2^62 ns (+-146 years), so that every difference and sum of two times
// stays inside int64.
int64_t checked_time(const Statement& stmt, int column, const std::string& path, const char* table,
                     int64_t row, const char* name);

}  // namespace fleetscope::store
