// Text primitives for writing JSON by hand, without a DOM: the exporter streams millions of events
// and a DOM per event (or for the whole file) would cost memory and time for nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fleetscope::exporter {

// Appends `text` as a quoted JSON string. Quotes, backslashes and every control character are
// escaped (\n \t \r \b \f, the rest as \u00XX); bytes that are not valid UTF-8 become U+FFFD so
// that strict parsers (Perfetto, nlohmann_json) accept the file whatever the database holds.
void append_json_string(std::string& out, std::string_view text);

// Appends a time in microseconds with exactly three decimals ("1234.567") from a nanosecond
// count, using integer arithmetic only: a double cannot hold absolute ns timestamps exactly.
void append_microseconds(std::string& out, int64_t ns);

void append_integer(std::string& out, int64_t value);

// Shortest text that reads back as the same double; "null" for NaN and infinities (not JSON).
void append_double(std::string& out, double value);

}  // namespace fleetscope::exporter
