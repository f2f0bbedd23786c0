// A capture's rows taken together, over the event tables of their one description (tables.py's
// event tables, FLEETSCOPE_EVENT_ROWS, and the SQL table_io.h generates from it) rather than a
// list of tables written where it is used: how a capture's rows of a table are selected (by the
// rowid ranges the writer records, capture_row_ranges), whether any is left (what the analyzer can
// analyse again, analyzer/analysis.h capture_findings()), the latest row time (the daemon closing
// a window a crash left open), deleting them (the daemon's retention) and a short account of them
// (the key the analyzer caches a capture's analysis under).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/store/database.h"

namespace fleetscope::store {

// What a query does with a capture's rows: reads them (all, in any order: ranges of rowids are
// the cheapest way on every file), or reads them by time (ordered by start, or a window of
// start): a file with a (captureId, start) index (a one-shot file: Writer::finish builds it)
// answers that from the index, which the plain captureId filter uses.
enum class CaptureRowsUse { rows, by_time };

// The one way to select a capture's rows of a table: "FROM ... WHERE ..." naming the rows of
// capture `capture_id` in `table`, the capture bound by the caller as parameter ?`param`. Columns
// named without a table are the table's (the rowid too, but write `table.rowid`, or `alias.rowid`
// when `alias` names the table); a caller adds " AND ..." conditions, GROUP BY, ORDER BY.
// For an event table with row ranges this is
//   FROM (SELECT first_rowid, last_rowid FROM capture_row_ranges WHERE tbl = 'T' AND
//         captureId = ?1) AS capture_ranges CROSS JOIN T ON T.rowid BETWEEN first_rowid AND
//         last_rowid WHERE T.captureId = ?1
// (the ranges outer, each a rowid range search of T; no per-capture index needed), checked first
// (capture_row_ranges_hold): where the rows found in the ranges differ from those they recorded
// (rowids changed, as a VACUUM may do, or rows deleted one by one), the ranges overlap, or the
// table's last row lies in no range (rows appended other than through store::Writer), this says
// so on stderr once per file, table and capture, and is the plain
// "FROM T WHERE T.captureId = ?1", not missing those rows. Other tables (iterations, whose key
// begins with captureId; captures' catalog tables) and `use` by_time on a file with a (captureId,
// start) index get the plain filter.
std::string capture_rows_sql(const Database& db, const std::string& table, int64_t capture_id,
                             int param = 1, CaptureRowsUse use = CaptureRowsUse::rows,
                             const std::string& alias = {});

// True when `table` is an event table whose captures' rows are found by capture_row_ranges.
bool has_row_ranges(const std::string& table);

// Whether capture_row_ranges still says where the capture's rows of `table` are: the rows its
// ranges recorded are the rows of the capture found in them (one count over those rows), no two
// overlap, and the table's last row lies in a range of its capture.
bool capture_row_ranges_hold(const Database& db, const std::string& table, int64_t capture_id);

// How many range checks (the counting pass above) this process has made: a check is made once per
// connection, table and capture while the file is unchanged (no commit by another connection, no
// change by this one), and inside a ReadSnapshot (database.h) once for the snapshot. For tests.
uint64_t capture_range_checks_made();

// Recomputes `table`'s capture_row_ranges from its rows (runs of consecutive rowids of one
// capture). For code that inserts event rows other than through store::Writer (which records
// them), so that every row of a capture stays in one of its ranges. Caller holds the transaction.
void recompute_capture_row_ranges(Database& db, const std::string& table);

// True when an event table (GPU activity, API calls, waits, NVTX, CPU ops, iterations, memory
// events, external correlations) has a row of the capture. Device samples do not count: the
// daemon samples its GPUs whether or not a capture is open, and no rule is made from them alone.
bool capture_has_rows(const Database& db, int64_t capture_id);

// The latest time of the capture's rows in the event tables (a row's end, or its start where it
// has none; a memory event's ts), device samples left out as above; nullopt without rows.
std::optional<int64_t> capture_last_row_ns(const Database& db, int64_t capture_id);

// What the capture's analysis reads, in a few hundred bytes: the capture row; per event table
// (device samples left out as above) the capture's row count (counted in its row ranges, by the
// check capture_rows_sql makes before a read), for iterations their count and summed times (an
// upsert replaces a step in place); the capture's GPU rows and process rows (its own and
// file-wide ones) by count and largest rowid; the workflows those processes point at. Rows added
// or deleted change it (fleetscope appends rows, and deletes a capture's rows all at once); so do
// replaced steps, GPUs and processes, and a repair of the process attribution. Not seen: an
// UPDATE of an event row in place, or as many rows deleted as added in between (no fleetscope
// writer does either).
std::string capture_rows_key(const Database& db, int64_t capture_id);

// Deletes the capture's rows from every event table (device samples taken in it included) and
// their capture_row_ranges. The caller holds the transaction and deletes the rest (the capture
// row, its GPUs, findings).
void delete_capture_rows(Database& db, int64_t capture_id);

// Moves the capture's rows in every event table with times by `delta_ns` (RowSink::shift_times).
// The caller holds the transaction.
void shift_capture_rows(Database& db, int64_t capture_id, int64_t delta_ns);

}  // namespace fleetscope::store
