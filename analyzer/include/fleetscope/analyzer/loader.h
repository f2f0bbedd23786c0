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

CaptureData load_capture(const store::Reader& reader, int64_t capture_id,
                         const LoadProgress& progress = {});

}  // namespace fleetscope::analyzer
