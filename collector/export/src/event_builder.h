// Builds one Chrome-trace event object into a reused string (no allocation per event once warm).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fleetscope/export/json_text.h"
#include "fleetscope/store/error.h"

namespace fleetscope::exporter {

// A time or duration whose arithmetic would overflow (a corrupt database: start = 1e300 read as
// INT64_MAX, or INT64_MIN). export_chrome turns it into an InputError naming the file.
struct TimeOutOfRange : Error {
  explicit TimeOutOfRange(int64_t v)
      : Error("time " + std::to_string(v) + " ns out of range (64-bit overflow)"), value(v) {}
  int64_t value;
};

class EventBuilder {
 public:
  explicit EventBuilder(int64_t base_time_ns) : base_(base_time_ns) { text_.reserve(4096); }

  EventBuilder& begin(std::string_view phase) {
    text_.clear();
    text_ += "{\"ph\":\"";
    text_ += phase;
    text_ += '"';
    first_arg_ = true;
    in_args_ = false;
    return *this;
  }
  EventBuilder& field(std::string_view key, std::string_view text) {
    key_(key);
    append_json_string(text_, text);
    return *this;
  }
  EventBuilder& field(std::string_view key, int64_t value) {
    key_(key);
    append_integer(text_, value);
    return *this;
  }
  // An absolute time (ns) written relative to the base, in µs with three decimals.
  EventBuilder& time(std::string_view key, int64_t absolute_ns) {
    key_(key);
    append_microseconds(text_, checked_difference(absolute_ns, base_, absolute_ns));
    return *this;
  }
  EventBuilder& duration(int64_t start_ns, int64_t end_ns) {
    key_("dur");
    append_microseconds(text_,
                        end_ns > start_ns ? checked_difference(end_ns, start_ns, end_ns) : 0);
    return *this;
  }

  EventBuilder& arg(std::string_view key, int64_t value) {
    arg_key_(key);
    append_integer(text_, value);
    return *this;
  }
  EventBuilder& arg(std::string_view key, int32_t value) { return arg(key, int64_t{value}); }
  EventBuilder& arg(std::string_view key, double value) {
    arg_key_(key);
    append_double(text_, value);
    return *this;
  }
  EventBuilder& arg(std::string_view key, std::string_view text) {
    arg_key_(key);
    append_json_string(text_, text);
    return *this;
  }
  EventBuilder& arg(std::string_view key, const char* text) {
    return arg(key, std::string_view(text));
  }
  EventBuilder& arg_dim3(std::string_view key, int64_t x, int64_t y, int64_t z) {
    arg_key_(key);
    text_ += '[';
    append_integer(text_, x);
    text_ += ',';
    append_integer(text_, y);
    text_ += ',';
    append_integer(text_, z);
    text_ += ']';
    return *this;
  }
  // `json` must already be valid JSON text.
  EventBuilder& arg_raw_json(std::string_view key, std::string_view json) {
    arg_key_(key);
    text_ += json;
    return *this;
  }

  // `members` must be valid JSON object members ("k":v,"k2":v2), e.g. TableRows::append_args.
  EventBuilder& args_raw(std::string_view members) {
    if (members.empty()) return *this;
    if (!in_args_) {
      text_ += ",\"args\":{";
      in_args_ = true;
    }
    if (!first_arg_) text_ += ',';
    first_arg_ = false;
    text_ += members;
    return *this;
  }

  std::string_view end() {
    if (in_args_) text_ += '}';
    text_ += '}';
    return text_;
  }

 private:
  // Times beyond ±2^62 ns (146 years from the epoch) are corrupt values, refused like overflow.
  static constexpr int64_t kMaxAbsTimeNs = (int64_t{1} << 62) - 1;
  static int64_t checked_difference(int64_t a, int64_t b, int64_t culprit) {
    for (int64_t t : {a, b})
      if (t < -kMaxAbsTimeNs || t > kMaxAbsTimeNs) throw TimeOutOfRange(t);
    int64_t out = 0;
    if (__builtin_sub_overflow(a, b, &out)) throw TimeOutOfRange(culprit);
    return out;
  }

  void key_(std::string_view key) {
    text_ += ",\"";
    text_ += key;
    text_ += "\":";
  }
  void arg_key_(std::string_view key) {
    if (!in_args_) {
      text_ += ",\"args\":{";
      in_args_ = true;
    }
    if (!first_arg_) text_ += ',';
    first_arg_ = false;
    append_json_string(text_, key);
    text_ += ':';
  }

  int64_t base_;
  std::string text_;
  bool first_arg_ = true;
  bool in_args_ = false;
};

}  // namespace fleetscope::exporter
