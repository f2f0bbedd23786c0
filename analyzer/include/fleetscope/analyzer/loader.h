// Loads one capture of a trace database into CaptureData. Large event tables are read with narrow
// prepared statements on the reader's connection (only the columns the analyzer uses), so a
// 10-million-event capture never materialises full row structs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/common/capture_choice.h"
#include "fleetscope/store/checked_column.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {

// Progress callback: (stage, rows loaded so far).
using LoadProgress = std::function<void(const std::string& stage, int64_t rows)>;

// The capture to analyse when none is named: the only one, else the newest (highest id).
// Throws InputError when the database has no capture or `requested` does not exist.
int64_t resolve_capture_id(const store::Reader& reader, std::optional<int64_t> requested);

// The captures a command reads for `--capture N|all` (common/capture_choice.h): N (which must
// exist), every capture for `all`; with nothing chosen the only capture, or, when the input holds
// several, every capture if `default_all`, else an InputError that lists them and names the
// option. `shown_path` is the path the user typed (an imported trace's database has none).
std::vector<int64_t> select_captures(const store::Reader& reader,
                                     const common::CaptureChoice& choice, bool default_all,
                                     const std::string& shown_path);

// `parts`: the optional tables to read (analysis.h's parts_needed() says which the selected rules
// and outputs need); the others stay empty and CaptureData::loaded says so.
CaptureData load_capture(const store::Reader& reader, int64_t capture_id,
                         const LoadProgress& progress = {},
                         const CaptureParts& parts = CaptureParts::all());

// Values read from a trace database are checked before use (store/checked_column.h: the one
// definition the export shares).
using store::checked_int;
using store::checked_time;

}  // namespace fleetscope::analyzer
