// Kineto importer, stage 1 of 3 (Perfetto-style): the tokenizer. File → decompressed bytes → a
// stream of flat RawEvent records (one per element of "traceEvents"), plus the top-level metadata
// (deviceProperties, distributedInfo, baseTimeNanoseconds, ...). It knows JSON, not Kineto
// semantics: stage 2 (kineto_parser.h) turns RawEvents into typed rows, stage 3
// (kineto_tracker.h) keeps the cross-event state.
//
// The input is held in one padded buffer (decompressed fully) and walked twice with the simdjson
// On-Demand API: once for the top-level metadata (which Kineto writes after traceEvents), once for
// the events. Timestamps are parsed from their decimal text, so ns-resolution µs floats such as
// 1712195495519689.123 keep every digit (a double would round them to 0.25 µs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/store/rows.h"

namespace fleetscope::importers::kineto {

// The decompressed input with simdjson's padding; `data` has capacity >= size + SIMDJSON_PADDING.
struct InputBuffer {
  std::string data;
  size_t size = 0;         // JSON bytes in data
  int64_t file_bytes = 0;  // bytes on disk
  bool gzip = false;
};

// Reads `path` fully, gunzipping when it starts with the gzip magic. Throws InputError naming the
// file and the compressed byte offset for truncated or corrupt gzip, and for empty files.
InputBuffer read_input(const std::string& path);

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
  int64_t as_int() const { return kind == Kind::real ? static_cast<int64_t>(d) : i; }
  double as_real() const { return kind == Kind::real ? d : static_cast<double>(i); }
};

// The args keys the parser reads; any other key is skipped without being materialised.
struct RawArgs {
  ArgValue device, stream, context, correlation, external_id, cbid, bytes;
  ArgValue grid, block, registers, shared_memory, blocks_per_sm, warps_per_sm, est_occupancy;
  ArgValue sync_kind, wait_event_id, size, kind;
  ArgValue device_type, device_id, addr, total_allocated, total_reserved;
  ArgValue meta_name, labels;
};

// A pid or tid: Kineto writes integers, older traces and span rows write strings ("stream 7",
// "24572", "Spans").
struct RawId {
  bool present = false;
  bool is_int = false;
  int64_t value = 0;
  std::string_view text;
};

struct RawEvent {
  size_t index = 0;   // position in traceEvents
  size_t offset = 0;  // byte offset of the event in the decompressed input
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
};

class Tokenizer {
 public:
  Tokenizer(std::string path, const InputBuffer& input);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Pass 1: the top-level keys other than traceEvents. Validates the document shape.
  TraceMeta read_metadata();
  // Pass 2: every element of traceEvents, in file order. Throws InputError on malformed events.
  void for_each_event(const std::function<void(const RawEvent&)>& fn);

  // "byte N (line L)" for an offset in the decompressed input.
  std::string position(size_t offset) const;
  [[noreturn]] void fail(size_t offset, const std::string& what) const;

 private:
  struct Impl;
  std::string path_;
  const InputBuffer& input_;
  Impl* impl_;
};

// Exact conversion of a JSON number's text in µs to integer ns (rounded half away from zero).
// Returns nullopt when the text is not a number.
std::optional<int64_t> micros_text_to_ns(std::string_view text);

}  // namespace fleetscope::importers::kineto
