// Kineto / PyTorch-profiler Chrome-trace JSON → trace store: tokenizer → parser → tracker.
#include <simdjson.h>

#include <filesystem>

#include "fleetscope/importers/importers.h"
#include "import_util.h"
#include "kineto_parser.h"
#include "kineto_tokenizer.h"
#include "kineto_tracker.h"

namespace fleetscope::importers {

std::string file_stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json", ".sqlite", ".db"}) {
    std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      name.resize(name.size() - e.size());
  }
  return name;
}

static ImportResult import_kineto_unchecked(const std::string& path, store::RowSink& writer,
                                            const ImportOptions& options);

ImportResult import_kineto(const std::string& path, store::RowSink& writer,
                           const ImportOptions& options) {
  try {
    return import_kineto_unchecked(path, writer, options);
  } catch (const simdjson::simdjson_error& e) {
    // Every simdjson call checks its error code; this is a safety net so that no malformed
    // input can surface as anything but an InputError.
    throw InputError(path, "", std::string("invalid JSON: ") + e.what());
  }
}

static ImportResult import_kineto_unchecked(const std::string& path, store::RowSink& writer,
                                            const ImportOptions& options) {
  using namespace kineto;
  ImportResult result;
  result.path = path;
  result.source = "kineto-json";
  TokenizerOptions tokenizer_options = TokenizerOptions::from_budget(options.memory_budget_bytes);
  if (options.whole_document_bytes >= 0)
    tokenizer_options.whole_document_bytes = static_cast<size_t>(options.whole_document_bytes);
  if (options.parse_thread_min_bytes >= 0)
    tokenizer_options.parse_thread_min_bytes = static_cast<size_t>(options.parse_thread_min_bytes);
  Tokenizer tokenizer(path, tokenizer_options);
  TraceMeta meta = tokenizer.read_metadata();
  // Kineto writes baseTimeNanoseconds after traceEvents. Rows are absolute times from the first
  // event on, so the base is taken from the members before the events, else from the file's
  // tail (uncompressed files); when the real member says otherwise (or a .gz file has one),
  // every row already emitted is shifted once at the end.
  int64_t assumed_base = meta.base_time_ns;
  if (!meta.has_base_time && !meta.events_is_root_array)
    if (auto peeked = peek_trailing_base_time(path)) assumed_base = *peeked;

  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = result.source;
  capture.source_path = path;
  capture.id = writer.add_capture(capture);
  result.capture_id = capture.id;

  // The tracker sizes its correlation map from the input size (one runtime call per ~1 KB).
  const ReadProgress sizes = tokenizer.progress();
  result.input_bytes = sizes.file_bytes * (tokenizer.gzip() ? 8 : 1);
  Parser parser(tokenizer, assumed_base);
  Tracker tracker(writer, capture.id, meta, result);
  const int64_t every = std::max<int64_t>(1, options.progress_every_events);
  int64_t bytes_done = 0;
  tokenizer.for_each_event([&](const RawEvent& ev) {
    ++result.events_seen;
    bytes_done = static_cast<int64_t>(ev.offset);
    if (options.progress && result.events_seen % every == 0) {
      const ReadProgress p = tokenizer.progress();
      options.progress({path, p.file_bytes_read, p.file_bytes, result.events_seen, false});
    }
    const char* category = nullptr;
    switch (classify(ev, &category)) {
      case EventKind::kernel:
        if (ev.cat.size() >= 4 && ev.cat.substr(0, 4) == "mtia") tracker.saw_mtia();
        tracker.add_kernel(parser.kernel(ev));
        break;
      case EventKind::memcpy:
        tracker.add_memcpy(parser.memcpy(ev));
        break;
      case EventKind::memset:
        tracker.add_memset(parser.memset(ev));
        break;
      case EventKind::runtime:
        if (ev.cat.size() >= 4 && ev.cat.substr(0, 4) == "mtia") tracker.saw_mtia();
        tracker.add_runtime(parser.runtime(ev, false), ev);
        break;
      case EventKind::driver:
        tracker.add_runtime(parser.runtime(ev, true), ev);
        break;
      case EventKind::sync:
        tracker.add_sync(parser.sync(ev));
        break;
      case EventKind::cpu_op:
        tracker.add_cpu_op(parser.cpu_op(ev, category), ev);
        break;
      case EventKind::memory:
        tracker.add_memory(parser.memory(ev), ev);
        break;
      case EventKind::metadata:
        tracker.on_metadata(ev);
        ++result.events_skipped;
        break;
      case EventKind::ignored:
        if (ev.ph.empty()) parser.missing(ev, "ph");
        ++result.events_skipped;
        break;
    }
  });
  tokenizer.read_trailing_metadata(meta);
  result.input_bytes = tokenizer.progress().json_bytes;
  if (meta.base_time_ns != assumed_base) {
    int64_t delta = 0;
    if (__builtin_sub_overflow(meta.base_time_ns, assumed_base, &delta))
      throw InputError(path, "", "baseTimeNanoseconds is out of range");
    tracker.shift(delta);
    writer.shift_times(capture.id, delta);
  }
  tracker.finish(options.workflow_name.empty() ? file_stem(path) : options.workflow_name);

  capture.start_ns = result.start_ns;
  capture.end_ns = result.end_ns;
  capture.gpu_vendor = result.gpu_vendor;
  capture.note = result.note;
  writer.update_capture(capture);
  if (options.progress) {
    const ReadProgress p = tokenizer.progress();
    options.progress({path, p.file_bytes, p.file_bytes, result.events_seen, true});
  }
  (void)bytes_done;
  return result;
}

}  // namespace fleetscope::importers
