// Kineto importer, stage 0: the splitter. Walks the document's top level as it streams in from an
// InputStream, without parsing the events: it finds where each element of "traceEvents" begins
// and ends (strings, escapes and nesting are tracked, nothing else) and hands out batches of
// whole events, each a small JSON array of its own that the tokenizer parses with simdjson. The
// other top-level values (deviceProperties, distributedInfo, baseTimeNanoseconds, ...) are kept
// as text, with their positions, for the tokenizer's metadata pass. So the document is read once,
// and memory is one window of input plus the batches in flight, whatever the file size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kineto_input.h"

namespace fleetscope::importers::kineto {

// A run of consecutive traceEvents elements: text is '[' + the elements as they appear in the
// file (separators included) + ']' + simdjson padding.
struct EventBatch {
  std::string text;
  size_t json_size = 0;    // bytes of JSON in text (before the padding)
  int64_t offset = 0;      // position in the document of text[1]
  int64_t first_line = 1;  // line of text[1]
  size_t first_index = 0;  // traceEvents index of the first element
  size_t count = 0;        // elements in the batch (kUnknownCount: not counted)
  // Whole-document mode: the batch is a view into the padded document instead of `text`.
  const char* view = nullptr;
  size_t view_capacity = 0;  // bytes readable from view (JSON + what follows + padding)
  static constexpr size_t kUnknownCount = static_cast<size_t>(-1);
};

// One top-level member other than the streamed traceEvents array.
struct MetaMember {
  std::string key;     // raw key text (between the quotes, escapes as written)
  std::string value;   // the value's JSON text
  int64_t offset = 0;  // position of the value in the document
  int64_t line = 1;
};

// How the splitter finds the end of an event object, 64 bytes at a time: with AVX-512BW and
// PCLMULQDQ where the CPU has them (chosen once, at start), else SSE2; `scalar` leaves every event
// to the byte scan. Every kind gives the same events (tests run each one the machine has).
enum class ObjectScan { scalar, sse2, avx512 };
ObjectScan object_scan();
bool object_scan_supported(ObjectScan kind);
// For tests: use `kind` from now on (must be supported).
void set_object_scan(ObjectScan kind);

class Splitter {
 public:
  // `batch_bytes`: target size of one batch; `max_value_bytes`: the largest single event or
  // metadata value accepted (the memory budget's share for one value).
  Splitter(InputStream& input, size_t batch_bytes, size_t max_value_bytes);

  enum class Step { batch, events_begin, end };
  // Advances to the next thing of interest: a batch of events (in `batch`), the start of the
  // traceEvents array (members seen so far are in before_events()), or the end of the document.
  // Throws InputError naming the file and byte/line for malformed JSON at the top level.
  Step next(EventBatch& batch);

  bool events_is_root_array() const { return root_array_; }
  bool saw_events() const { return saw_events_; }
  std::vector<MetaMember>& members() { return members_; }
  int64_t bytes_consumed() const { return window_offset_ + static_cast<int64_t>(pos_); }

 private:
  enum class State { start, object_member, object_after_value, events, after_events, done };

  // Keeps [keep_, end_) (moved to the front), reads more; false at the end of input. Positions
  // held in members are shifted with the window.
  bool fill();
  bool skip_ws();  // false at end of input
  void emit(EventBatch& batch);
  // Scans one JSON value starting at pos_; returns its end (exclusive) relative to the window,
  // refilling as needed. `limit` bounds its size.
  size_t scan_value(size_t limit, const char* what);
  // The vectorised scan of one event object, for the common case (see the definition).
  size_t find_object_end(size_t pos, size_t limit) const;
  std::string read_key();
  void advance_lines(size_t to);
  [[noreturn]] void fail(size_t at, const std::string& what);

  InputStream& input_;
  size_t batch_bytes_, max_value_bytes_;
  std::string window_;
  size_t pos_ = 0, end_ = 0;
  size_t keep_ = 0;            // first byte that must survive a refill
  int64_t window_offset_ = 0;  // document position of window_[0]
  bool eof_ = false;
  int64_t lines_ = 1;   // line number at counted_
  size_t counted_ = 0;  // window position up to which newlines are counted
  State state_ = State::start;
  bool root_array_ = false, saw_events_ = false;
  bool expect_element_ = false, after_comma_ = false, first_member_ = false;
  size_t index_ = 0;
  static constexpr size_t kNoPos = static_cast<size_t>(-1);
  size_t batch_start_ = kNoPos, batch_end_ = 0;  // the batch being built, window positions
  int64_t batch_line_ = 1;
  size_t batch_first_index_ = 0, batch_count_ = 0;
  size_t scan_start_ = kNoPos, scan_cursor_ = 0;  // the value being scanned
  std::vector<MetaMember> members_;
};

}  // namespace fleetscope::importers::kineto
