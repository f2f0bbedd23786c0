// The analysis cache: a capture's findings as `analyze` or the daemon stored them are reused only
// under the key they were made under, so that reading them gives what analysing now would give.
//
// The key is the capture's rows (store::capture_rows_key: per table row counts and largest rowids,
// taken by the loader before it reads a row), the rule selection, the threshold overrides and
// the analyzer's build (a hash of the analyzer's sources, made at build time). Any change to one
// of them misses, and the capture is analysed again. The entry (the key and each rule's outcome)
// lives in the file's `meta` table under "analysis.<captureId>", beside the findings table that
// holds the findings; writing findings without a key removes the entry. docs/analyzer.md,
// "Stored and fresh findings".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "fleetscope/analyzer/analysis.h"

namespace fleetscope::store {
class Reader;
class Writer;
}  // namespace fleetscope::store

namespace fleetscope::analyzer {

// A hash of the analyzer's sources and headers, fixed when the analyzer is built: a rule or a
// metric changed in any way makes earlier entries miss.
const char* analyzer_build_hash();

// The meta key of a capture's entry: "analysis.<captureId>".
std::string analysis_meta_key(int64_t capture_id);

// The key of an analysis of rows described by `rows_key` with `options`. Throws
// std::invalid_argument for an unknown rule id (as the analysis would).
std::string analysis_key(const std::string& rows_key, const AnalyzeOptions& options);

// The stored analysis of the capture when its entry has exactly `key` and the findings table
// still holds the findings it counted; nullopt otherwise (no entry, another key, a damaged one).
// The result has from_cache set and source analysed.
std::optional<AnalysisResult> cached_analysis(const store::Reader& reader, int64_t capture_id,
                                              const std::string& key);

// Replaces the capture's findings with `result.findings` (setting their ids and capture) and
// files the entry under `result.cache_key`; without a key (a capture that was in no database)
// the findings are stored and no entry is made. The entry is written last, so an interrupted
// store leaves none.
void store_analysis(store::Writer& writer, int64_t capture_id, AnalysisResult& result);

}  // namespace fleetscope::analyzer
