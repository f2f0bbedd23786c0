// The zoom levels of a capture cached beside its database ("trace.db" → "trace.db.capture3.zoom"),
// so reopening a large capture paints at once from the summary while its raw events load.
//
// Binary, little-endian, versioned: magic "FSZOOM03", the database's size and modification time
// (a cache that does not match them is ignored and rebuilt), the capture id and span, the names,
// Binary, little-endian, versioned: magic "FSZOOM04", the database's size and modification time
// (a cache that does not match them is ignored and rebuilt), the capture id and span, the names,
// then per track its key, labels and per row its coarser levels (the finest levels that fit a
// budget of about a million items over all tracks; the first paint needs no more), then an
// FNV-1a 64 checksum of all that. A cache is untrusted input (anyone who can write beside the
// database can plant one): it is read only when it is at most 256 MiB, owned by the user and no
// link, and its checksum, counts (against the bytes left, before any allocation) and enum values
// hold. Written under a fresh name (O_CREAT|O_EXCL|O_NOFOLLOW) and renamed into place, in the
// database's folder when that is the user's alone, else in $XDG_CACHE_HOME/fleetscope (or
// ~/.cache/fleetscope); a folder that cannot be written just means no cache (never an error for
// the user).
#pragma once

#include <optional>
#include <string>

#include "fleetscope/timeline/timeline_data.h"

namespace fleetscope::timeline {

std::string timeline_cache_path(const std::string& db_path, int64_t capture_id);
// true when written. `item_budget`: level items over all tracks (the coarsest level is always
// kept).
bool save_timeline_cache(const std::string& db_path, const TimelineData& data,
                         uint64_t item_budget = 1'000'000);
// The cached tracks, names and levels (no raw events: has_events is false), or nothing when
// there is no valid cache for this database file and capture.
std::optional<TimelineData> load_timeline_cache(const std::string& db_path, int64_t capture_id);

// The step a writer runs once a database is complete and in place (the importer after its
// rename): builds the zoom levels of every capture and writes their caches, so that the first
// GUI open of a freshly written capture already paints from the summary. Returns how many
// captures got a cache; a database that cannot be read or a directory that cannot be written
// means fewer (the GUI then builds the levels itself), never an error.
int write_capture_summaries(const std::string& db_path, uint64_t item_budget = 1'000'000);

}  // namespace fleetscope::timeline
