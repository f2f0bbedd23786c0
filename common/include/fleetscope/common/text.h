// Small string helpers shared by the config-file parsers (daemon config, TLS uid map, analyzer
// thresholds).
#pragma once

#include <string>

namespace fleetscope::text {

// `s` without leading and trailing blanks (space, tab, carriage return).
inline std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

}  // namespace fleetscope::text
