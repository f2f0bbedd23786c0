// One CSV field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break
// (quotes inside doubled), as is otherwise. Every command with --format csv writes its cells
// through this, so a name taken from a file (a workflow named after a trace file, a SQL value)
// can never add a column or a row.
#pragma once

#include <string>
#include <string_view>

namespace fleetscope::common {

inline std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

}  // namespace fleetscope::common
