// Trace importers: Kineto / PyTorch-profiler Chrome-trace JSON (.json, .json.gz) and the
// Nsight Systems SQLite export, into the fleetscope trace store (schema/tables.py).
//
// Every import is one capture (kind 'imported'). Bad input raises fleetscope::InputError with a
// one-line message naming the file and the position (byte offset / line, event index, or table).
// import_files() writes through store::AtomicOutput, so a failed import leaves no output behind.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::importers {

enum class Format { unknown, kineto_json, kineto_json_gz, nsys_sqlite };
const char* to_string(Format format);

// Detects the format by content: gzip magic (1f 8b), a JSON document ('{' or '[' after
// whitespace), or the SQLite header ("SQLite format 3\0"). Throws InputError when the file cannot
// be read or is empty; returns Format::unknown for anything else.
Format detect_format(const std::string& path);

struct ImportProgress {
  std::string path;
  int64_t bytes_done = 0;   // bytes of the file consumed (compressed bytes for .gz)
  int64_t bytes_total = 0;  // the file's size; 0 when unknown
  int64_t events = 0;       // events/rows seen so far
  bool done = false;        // last report for this file
};
using ProgressFn = std::function<void(const ImportProgress&)>;

struct ImportOptions {
  ProgressFn progress;  // optional; called every `progress_every_events` events
  int64_t progress_every_events = 200000;
  std::string workflow_name;  // empty = file stem
  // Memory the import may use for input in flight (batches of JSON, one event or metadata value
  // at most a quarter of it), whatever the file size; the SQLite writer's queue is bounded
  // separately (store::WriterOptions). See docs/benchmarks.md for peak RSS measurements.
  int64_t memory_budget_bytes = int64_t{1} << 30;
  // Kineto JSON up to this many (decompressed) bytes is read whole and parsed in one pass; larger
  // files are streamed. -1: a sixteenth of the budget (64 MiB by default); 0: always stream.
  int64_t whole_document_bytes = -1;
  // Kineto JSON of at least this many bytes is parsed on a second thread while the importing
  // thread turns the events into rows (on machines with two cores or more). -1: the tokenizer's
  // default (32 MiB); 0: always.
  int64_t parse_thread_min_bytes = -1;
  // import_files() with several files: how many are imported at once (each on its own thread,
  // one writer; each gets an equal share of the memory budget, and no parse thread of its own).
  // 0: one per core; 1: serial.
  size_t parallel_files = 0;
};

// The store::Writer settings import_files() writes with (a temporary output, 8,192 rows per
// transaction, at most 4 batches queued). The queue bounds how far the writer may lag the parser:
// whatever is still queued when the file has been read is written while the other core idles, and
// index builds wait for it (with 65,536-row batches and 8 queued, that tail was most of a batch
// queue at 1e6 events). The import benchmark's insert limit uses the same settings.
store::WriterOptions import_writer_options();

// What one import produced (rows per event kind), for summaries and tests.
struct ImportResult {
  std::string path;
  std::string source;  // 'kineto-json' or 'nsys-sqlite'
  int64_t capture_id = 0;
  int64_t kernels = 0, memcpys = 0, memsets = 0, runtime_calls = 0, syncs = 0;
  int64_t cpu_ops = 0, nvtx_events = 0, iterations = 0, memory_events = 0, gpus = 0;
  int64_t events_seen = 0;     // input events / rows read
  int64_t events_skipped = 0;  // events of kinds we do not store (flows, metadata, counters ...)
  std::optional<int64_t> start_ns, end_ns;
  std::optional<std::string> gpu_vendor;  // 'nvidia', 'amd', or none
  std::optional<std::string> note;
  int64_t input_bytes = 0;  // bytes parsed (decompressed size for JSON)
};

// Imports one Kineto trace into `writer` (a store::Writer, or any other store::RowSink) as a new
// capture. Throws InputError on bad input.
ImportResult import_kineto(const std::string& path, store::RowSink& writer,
                           const ImportOptions& options = {});

// Imports one Nsight Systems SQLite export into `writer` as a new capture.
ImportResult import_nsys_sqlite(const std::string& path, store::RowSink& writer,
                                const ImportOptions& options = {});

// Detects the format and dispatches to the importer above.
ImportResult import_file(const std::string& path, store::RowSink& writer,
                         const ImportOptions& options = {});

// Imports every file into a new database `out_db` (each file its own capture), atomically: the
// database is built at a temporary path and renamed over `out_db` only when every file imported.
// `overwrite` allows replacing an existing `out_db`; without it an existing file is an error.
std::vector<ImportResult> import_files(const std::vector<std::string>& paths,
                                       const std::string& out_db, const ImportOptions& options = {},
                                       bool overwrite = false);

// A trace file imported into a private in-memory trace database (store::Database::
// create_in_memory()): no file is written, nothing is synced, and no indexes are built, since the
// caller reads it once (analyzer::load_capture on store::Reader(std::move(database))).
struct MemoryImport {
  store::Database database;  // read-write connection; the database lives as long as it does
  ImportResult result;       // result.capture_id is the capture to load
};

// Imports one trace file (any format import_file() accepts) into a new in-memory database.
// (`fleetscope analyze TRACE.json.gz` skips the database: analyzer::load_trace_file feeds the
// importer's rows straight into the analyzer's CaptureData, with the same result.) Throws
// InputError on bad input, like import_files(); a failed import leaves nothing behind.
MemoryImport import_to_memory(const std::string& path, const ImportOptions& options = {});

// One-line human summary of a result ("FILE: 4350 kernels, 1600 memcpy, ... span 0.578 s").
std::string summary_line(const ImportResult& result);

}  // namespace fleetscope::importers
