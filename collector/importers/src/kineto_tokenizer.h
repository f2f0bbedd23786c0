// Kineto importer, stage 1 of 3 (Perfetto-style): the tokenizer. File → decompressed bytes → a
// stream of flat RawEvent records (one per element of "traceEvents"), plus the top-level metadata
// (deviceProperties, distributedInfo, baseTimeNanoseconds, ...). It knows JSON, not Kineto
// semantics: stage 2 (kineto_parser.h) turns RawEvents into typed rows, stage 3
// (kineto_tracker.h) keeps the cross-event state.
//
// The input is streamed: a reader thread reads (and gunzips) the file and splits it into batches
// of whole events (kineto_splitter.h); this thread parses each batch with the simdjson On-Demand
// API while the reader fetches the next, so memory is a few batches whatever the file size, and
// reading/decompression overlaps parsing. Top-level metadata is kept as text by the splitter and
// parsed here: the members before traceEvents by read_metadata(), those after it (Kineto writes
// baseTimeNanoseconds, displayTimeUnit, traceName there) by read_trailing_metadata() once the
// events are done. Timestamps are parsed from their decimal text, so ns-resolution µs floats
// such as 1712195495519689.123 keep every digit (a double would round them to 0.25 µs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/store/rows.h"

namespace fleetscope::importers::kineto {

// One JSON value of an "args" entry we care about. Strings point into the parser's buffer and
// are valid for the duration of the for_each_event callback only.
struct ArgValue {
  enum class Kind : uint8_t { absent, integer, real, string, triple, other };
  Kind kind = Kind::absent;
  int64_t i = 0;
  double d = 0;
  std::string_view s;
  int64_t v[3] = {0, 0, 0};
  bool present() const { return kind != Kind::absent; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::real; }
  // A real is converted only when it is finite and inside int64's range (the caller checks
  // fits_int() first: a cast of 1e30 or NaN is undefined behaviour).
  bool fits_int() const {
    return kind == Kind::integer || (kind == Kind::real && d >= -9.2e18 && d <= 9.2e18);
  }
  // Saturating: a float outside int64 (or NaN) must not reach a cast (undefined behaviour); the
  // callers range-check the result and name the position.
  int64_t as_int() const {
    if (kind != Kind::real) return i;
    if (!(d == d)) return 0;
    if (d >= 9.223372036854775807e18) return INT64_MAX;
    if (d <= -9.223372036854775808e18) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  double as_real() const { return kind == Kind::real ? d : static_cast<double>(i); }
};

// The args keys the parser reads; any other key is skipped without being materialised.
struct RawArgs {
  ArgValue device, stream, context, correlation, external_id, cbid, bytes;
  ArgValue grid, block, registers, shared_memory, blocks_per_sm, warps_per_sm, est_occupancy;
  ArgValue sync_kind, wait_event_id, wait_record_correlation, wait_on_stream, size, kind;
  ArgValue device_type, device_id, addr, total_allocated, total_reserved;
  ArgValue meta_name, labels;
};

// One of RawArgs' slots (the walker records which slots an event filled).
using ArgMember = ArgValue RawArgs::*;

// A pid or tid: Kineto writes integers, older traces and span rows write strings ("stream 7",
// "24572", "Spans").
struct RawId {
  bool present = false;
  bool is_int = false;
  int64_t value = 0;
  std::string_view text;
};

// The event phases the importer translates: complete events (X), metadata (M) and instants
// (i/I, the memory events). Of any other event (flows s/f/t, counters, B/E pairs, async b/e) only
// "ph" is read: nothing uses its other fields, so they are skipped (not converted or
// range-checked), which spares the walker about a third of a PyTorch trace (its ac2g and fwdbwd
// flows). classify() (kineto_parser.h) ignores the same phases.
inline bool phase_is_read(std::string_view ph) {
  return ph.size() == 1 && (ph[0] == 'X' || ph[0] == 'M' || ph[0] == 'i' || ph[0] == 'I');
}

struct RawEvent {
  size_t index = 0;   // position in traceEvents
  size_t offset = 0;  // byte offset of the event in the (decompressed) document
  std::string_view ph, cat, name;
  bool has_name = false;
  std::optional<int64_t> ts_ns;  // relative to TraceMeta::base_time_ns; µs text converted exactly
  std::optional<int64_t> dur_ns;
  RawId pid, tid;
  RawArgs args;
};

struct TraceMeta {
  int64_t base_time_ns = 0;  // baseTimeNanoseconds (newer Kineto writes ts relative to it)
  std::string display_time_unit;
  std::vector<store::GpuInfo> devices;  // deviceProperties / computeProperties
  bool has_device_properties = false;
  std::optional<int32_t> rank, world_size;
  std::string host_name;
  std::string user;
  bool events_is_root_array = false;  // the document is a bare JSON array of events
  bool has_base_time = false;         // baseTimeNanoseconds was given
};

// How the tokenizer uses memory: batches of about `batch_bytes` of JSON, at most
// `queued_batches` of them waiting, and no single event or metadata value above
// `max_value_bytes`. from_budget() derives them from one memory budget.
struct TokenizerOptions {
  size_t batch_bytes = size_t{512} << 10;  // from_budget(1 GiB)
  size_t queued_batches = 3;
  size_t max_value_bytes = size_t{256} << 20;
  // A document up to this size (decompressed) is read whole and parsed in one simdjson pass,
  // without the reader thread and the splitter: cheaper for the many small traces; larger ones
  // are streamed. 0: always stream.
  size_t whole_document_bytes = size_t{64} << 20;
  // Inputs of at least this many bytes are parsed on a second thread, ahead of the
  // for_each_event callback (which stays on the calling thread, in file order), when the machine
  // has two cores or more. Smaller ones (most single-step traces; thread start and the hand-off
  // copy of every event would cost more CPU than the overlap saves wall time) and single-core
  // machines parse on the calling thread. SIZE_MAX: never.
  size_t parse_thread_min_bytes = size_t{32} << 20;
  static TokenizerOptions from_budget(int64_t budget_bytes);
};

// Progress of the read side (for progress lines): bytes of the file consumed so far.
struct ReadProgress {
  int64_t file_bytes = 0, file_bytes_read = 0;
  int64_t json_bytes = 0;  // document bytes split so far (decompressed for gzip)
};

struct MetaMember;  // kineto_splitter.h

class Tokenizer {
 public:
  // Opens the file (InputError when it cannot be read or is empty); reading starts on the first
  // call below.
  explicit Tokenizer(std::string path, TokenizerOptions options = {});
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // The top-level members before "traceEvents". Validates the document shape.
  TraceMeta read_metadata();
  // Every element of traceEvents, in file order. Throws InputError on malformed events.
  void for_each_event(const std::function<void(const RawEvent&)>& fn);
  // After for_each_event: the members after the traceEvents array, merged into `meta`.
  void read_trailing_metadata(TraceMeta& meta);

  ReadProgress progress() const;
  bool gzip() const;

  // "byte N (line L)" for a position in the (decompressed) document.
  std::string position(size_t offset) const;
  [[noreturn]] void fail(size_t offset, const std::string& what) const;

 private:
  struct Impl;
  void parse_members(const std::vector<MetaMember>& members, TraceMeta& meta, bool require_events);
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// For an uncompressed file: baseTimeNanoseconds read from the file's last 64 KiB, where Kineto
// writes it (after traceEvents), so that rows can carry absolute times from the first event
// without a second walk of the document. nullopt when not found there (or the file is gzip).
std::optional<int64_t> peek_trailing_base_time(const std::string& path);

// Exact conversion of a JSON number's text in µs to integer ns (rounded half away from zero).
// Returns nullopt when the text is not a number.
std::optional<int64_t> micros_text_to_ns(std::string_view text);

}  // namespace fleetscope::importers::kineto
