// `--capture N|all`: one syntax for every command that reads captures (analyze, report, info,
// export, fleet, diff, candidates). Header-only and in the bottom layer, beside args.h.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace fleetscope::common {

struct CaptureChoice {
  bool all = false;           // --capture all
  std::optional<int64_t> id;  // --capture N
  bool given() const { return all || id.has_value(); }
  // "capture 3", "every capture", or "" when nothing was given.
  std::string text() const {
    if (all) return "every capture";
    return id ? "capture " + std::to_string(*id) : std::string();
  }
};

// "" (option absent) → nothing chosen; "all" → every capture; a non-negative integer → that id.
// Anything else throws std::invalid_argument (a usage error, exit 2).
inline CaptureChoice parse_capture_choice(const std::string& text) {
  CaptureChoice choice;
  if (text.empty()) return choice;
  if (text == "all") {
    choice.all = true;
    return choice;
  }
  char* end = nullptr;
  errno = 0;
  const long long id = std::strtoll(text.c_str(), &end, 10);
  // (ERANGE: 99999999999999999999 was taken as 9223372036854775807 and reported as "no capture
  // with id 9223372036854775807".)
  if (*end != '\0' || id < 0 || errno == ERANGE || !(text[0] >= '0' && text[0] <= '9'))
    throw std::invalid_argument(
        "--capture expects a capture id (see `fleetscope info`) or 'all', got '" + text + "'");
  choice.id = id;
  return choice;
}

}  // namespace fleetscope::common
