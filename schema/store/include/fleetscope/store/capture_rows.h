// A capture's rows taken together, over the event tables of their one description (tables.py's
// event tables, FLEETSCOPE_EVENT_ROWS, and the SQL table_io.h generates from it) rather than a
// list of tables written where it is used: whether any is left (what the analyzer can analyse
// again, analyzer/analysis.h capture_findings()), the latest row time (the daemon closing a window
// a crash left open), deleting them (the daemon's retention) and a short account of them (the key
// the analyzer caches a capture's analysis under).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/store/database.h"

namespace fleetscope::store {

// True when an event table (GPU activity, API calls, waits, NVTX, CPU ops, iterations, memory
// events, external correlations) has a row of the capture. Device samples do not count: the
// daemon samples its GPUs whether or not a capture is open, and no rule is made from them alone.
bool capture_has_rows(const Database& db, int64_t capture_id);

// The latest time of the capture's rows in the event tables (a row's end, or its start where it
// has none; a memory event's ts), device samples left out as above; nullopt without rows.
std::optional<int64_t> capture_last_row_ns(const Database& db, int64_t capture_id);

// What the capture's analysis reads, in a few hundred bytes: the capture row; per event table
// (device samples left out as above) the capture's row count, and for iterations their summed
// times (an upsert replaces a step in place); the capture's GPU rows and process rows (its own and
// file-wide ones) by count and largest rowid; the workflows those processes point at. Rows added
// or deleted change it (fleetscope appends rows, and deletes a capture's rows all at once); so do
// replaced steps, GPUs and processes, and a repair of the process attribution. Not seen: an UPDATE
// of an event row in place, or as many rows deleted as added in between (no fleetscope writer
// does either). Counted on the (captureId, ...) indexes, without reading a row.
std::string capture_rows_key(const Database& db, int64_t capture_id);

// Deletes the capture's rows from every event table (device samples taken in it included). The
// caller holds the transaction and deletes the rest (the capture row, its GPUs, findings).
void delete_capture_rows(Database& db, int64_t capture_id);

}  // namespace fleetscope::store
