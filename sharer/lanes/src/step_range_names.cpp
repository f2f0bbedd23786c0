#include "fleetscope/lanes/step_range_names.h"

#include <cstring>

namespace fleetscope::lanes {

StepRangeNames::StepRangeNames(std::string_view text) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(pos, comma - pos);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (!entry.empty()) entries_.emplace_back(entry);
    pos = comma + 1;
  }
  if (entries_.empty()) entries_ = {"ProfilerStep#", "step"};
}

bool StepRangeNames::matches(const char* name) const {
  if (!name) return false;
  for (const std::string& entry : entries_) {
    if (entry.back() == '#') {
      if (std::strncmp(name, entry.data(), entry.size()) != 0) continue;
      const char* digits = name + entry.size();
      if (*digits == '\0') continue;
      while (*digits >= '0' && *digits <= '9') ++digits;
      if (*digits == '\0') return true;
    } else if (std::strcmp(name, entry.c_str()) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace fleetscope::lanes
