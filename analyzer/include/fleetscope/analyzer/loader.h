// Loads one capture of a trace database into CaptureData. Large event tables are read with narrow
// prepared statements on the reader's connection (only the columns the analyzer uses), so a
// 10-million-event capture never materialises full row structs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {

// Progress callback: (stage, rows loaded so far).
using LoadProgress = std::function<void(const std::string& stage, int64_t rows)>;

// The capture to analyse when none is named: the only one, else the newest (highest id).
// Throws InputError when the database has no capture or `requested` does not exist.
int64_t resolve_capture_id(const store::Reader& reader, std::optional<int64_t> requested);

// `parts`: the optional tables to read (analysis.h's parts_needed() says which the selected rules
// and outputs need); the others stay empty and CaptureData::loaded says so.
CaptureData load_capture(const store::Reader& reader, int64_t capture_id,
                         const LoadProgress& progress = {},
                         const CaptureParts& parts = CaptureParts::all());

// Values read from a trace database are untrusted (a corrupted or hand-edited file): each is
// checked before it is used, and a bad one is an InputError naming the file, the table, the row
// and the column. checked_int: an INTEGER (not a REAL, text or blob) in [lo, hi]; NULL only when
// `null_value` is given. checked_time: an INTEGER time within +-2^62 ns (+-146 years), so that
// every difference and sum of two times the rules compute stays inside int64.
int64_t checked_int(const store::Statement& stmt, int column, const std::string& path,
                    const char* table, int64_t row, const char* name, int64_t lo = INT64_MIN,
                    int64_t hi = INT64_MAX, std::optional<int64_t> null_value = std::nullopt);
int64_t checked_time(const store::Statement& stmt, int column, const std::string& path,
                     const char* table, int64_t row, const char* name);

}  // namespace fleetscope::analyzer
