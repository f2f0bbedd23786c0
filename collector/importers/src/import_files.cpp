#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/new_file.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/input_files.h"
#include "fleetscope/store/read_policy.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/unreadable_file.h"
#include "fleetscope/timeline/timeline_cache.h"
#include "parallel_import.h"

namespace fleetscope::importers {

const char* to_string(Format format) {
  switch (format) {
    case Format::kineto_json:
      return "kineto-json";
    case Format::kineto_json_gz:
      return "kineto-json (gzip)";
    case Format::nsys_sqlite:
      return "nsys-sqlite";
    case Format::unknown:
      break;
  }
  return "unknown";
}

namespace {

[[noreturn]] void throw_unrecognised_format(const std::string& path) {
  throw unreadable_file(path, "not a trace file (it holds " + common::describe_file_start(path) +
                                  "); expected Kineto JSON, .json.gz or an nsys SQLite export");
}

}  // namespace

Format detect_format(const std::string& path) {
  if (auto problem = common::input_problem(
          path, "a trace file (Kineto JSON, .json.gz, or an nsys SQLite export)"))
    throw unreadable_file(path, *problem);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw unreadable_file(path, std::strerror(errno));
  unsigned char head[512];
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == 0)
    throw InputError(path, "byte 0",
                     "empty file, expected Kineto JSON (.json/.json.gz) or an nsys SQLite export");
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Format::kineto_json_gz;
  if (n >= 16 && std::memcmp(head, "SQLite format 3\0", 16) == 0) return Format::nsys_sqlite;
  size_t i = 0;
  if (n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF) i = 3;  // UTF-8 BOM
  while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  if (i < n && (head[i] == '{' || head[i] == '[')) return Format::kineto_json;
  return Format::unknown;
}

ImportResult import_file(const std::string& path, store::RowSink& writer,
                         const ImportOptions& options) {
  switch (detect_format(path)) {
    case Format::kineto_json:
    case Format::kineto_json_gz:
      return import_kineto(path, writer, options);
    case Format::nsys_sqlite:
      return import_nsys_sqlite(path, writer, options);
    case Format::unknown:
      break;
  }
  throw_unrecognised_format(path);
}

store::WriterOptions import_writer_options() {
  store::WriterOptions options;
  options.temporary_output = true;  // the file only becomes visible through commit()
  options.batch_rows = 8192;
  options.max_queued_batches = 4;
  return options;
}

std::vector<ImportResult> import_files(const std::vector<std::string>& paths,
                                       const std::string& out_db, const ImportOptions& options,
                                       bool overwrite) {
  std::error_code ec;
  // symlink_status: a link to nowhere exists too (the rename would replace the link).
  if (!overwrite && std::filesystem::exists(std::filesystem::symlink_status(out_db, ec)))
    throw Error(out_db + ": already exists (use --force to replace it)");
  // Check every input is readable and recognisable before building anything.
  for (const auto& p : paths) {
    if (detect_format(p) == Format::unknown) throw_unrecognised_format(p);
    // A fleetscope database (of any schema) read as an nsys export lost its CPU ops, iterations,
    // memory events and findings, and one of a newer schema was imported without a word.
    if (input_kind(p) == InputKind::fleetscope_database)
      throw unreadable_file(p,
                            "it is a fleetscope database already; expected a Kineto JSON trace or "
                            "an nsys SQLite export to import (every command reads the database as "
                            "it is: `fleetscope info " +
                                p + "`)");
    store::note_input_file(p);  // -o naming an input is refused (store/input_files.h)
  }
  store::AtomicOutput output(
      out_db, overwrite ? store::AtomicOutput::Replace::yes : store::AtomicOutput::Replace::no);
  std::vector<ImportResult> results;
  // The timeline's zoom levels (timeline/), so the GUI's first open of a large capture
  // paints from them. They are built from the rows while the writer builds its indexes (a second
  // read connection; both are a full pass over the data, on the two cores), and written once the
  // database is in place (the cache records the final file's size and time).
  std::vector<timeline::TimelineData> summaries;
  try {
    {
      store::Writer writer(store::Database::create(output.temp_path()), import_writer_options());
      // Several files: parsed on as many threads as there are cores, the one writer takes the
      // rows of all of them (parallel_import.h); the result is the serial import's.
      const size_t workers = options.parallel_files > 0 ? options.parallel_files
                                                        : parallel_import_workers(paths.size());
      if (paths.size() > 1 && workers > 1)
        results = import_in_parallel(paths, writer, options, workers);
      else
        for (const auto& p : paths) results.push_back(import_file(p, writer, options));
      writer.finish([&] {
        try {
          const store::Reader reader(output.temp_path());
          // Waits for the index build's commit rather than giving up after the default timeout.
          sqlite3_busy_timeout(reader.database().raw(), INT32_MAX);
          for (const auto& capture : reader.captures()) {
            timeline::TimelineData data = timeline::load_timeline(reader, capture.id);
            data.events.clear();  // the cache keeps the levels only
            data.rows.clear();
            data.has_events = false;
            summaries.push_back(std::move(data));
          }
        } catch (const std::exception&) {
          summaries.clear();  // no summary; the GUI builds the levels itself when it opens the file
        }
      });
    }
    output.commit();
  } catch (const Error& e) {
    // Writing failed (a full disk, a file size limit): the error names OUT.db, not its temporary.
    const std::string message = e.what();
    if (message.find(output.temp_path()) == std::string::npos) throw;
    throw Error(common::with_output_name(message, output.temp_path(), out_db));
  }
  for (const auto& data : summaries) timeline::save_timeline_cache(out_db, data);
  return results;
}

MemoryImport import_to_memory(const std::string& path, const ImportOptions& options) {
  if (detect_format(path) == Format::unknown) throw_unrecognised_format(path);
  store::Database database = store::Database::create_in_memory();
  ImportResult result;
  try {
    store::WriterOptions writer_options;
    writer_options.temporary_output = true;  // no journal, no syncs: the database dies with us
    writer_options.build_indexes = false;    // read once, in full, by the loader
    store::Writer writer(database.another_connection(), writer_options);
    result = import_file(path, writer, options);
    writer.finish();
  } catch (const std::system_error& e) {
    // A thread (the writer's, the reader's) that cannot start within the command's memory budget
    // (--memory-limit): `export trace.json --memory-limit 1M` said only "error: Resource
    // temporarily unavailable".
    if (store::read_memory_limit() != 0 && e.code() == std::errc::resource_unavailable_try_again)
      throw InputError(path, "", store::memory_budget_text());
    throw;
  }
  return {std::move(database), std::move(result)};
}

std::string summary_line(const ImportResult& r) {
  std::ostringstream s;
  s << r.path << ": capture " << r.capture_id << " (" << r.source << "): " << r.kernels
    << " kernels, " << r.memcpys << " memcpy, " << r.memsets << " memset, " << r.runtime_calls
    << " runtime/driver calls, " << r.syncs << " syncs, " << r.cpu_ops << " cpu ops, "
    << r.iterations << " iterations";
  if (r.nvtx_events) s << ", " << r.nvtx_events << " nvtx";
  if (r.memory_events) s << ", " << r.memory_events << " memory events";
  s << ", " << r.gpus << " GPUs";
  if (r.start_ns && r.end_ns) {
    char span[64];
    std::snprintf(span, sizeof span, ", span %.6f s",
                  static_cast<double>(*r.end_ns - *r.start_ns) / 1e9);
    s << span;
  }
  s << ", vendor " << r.gpu_vendor.value_or("none");
  if (r.note) s << " (" << *r.note << ")";
  return s.str();
}

}  // namespace fleetscope::importers
