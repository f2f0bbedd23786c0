#include "fleetscope/agent/step_names.h"

#include <charconv>

namespace fleetscope::agent {

StepNames StepNames::parse(std::string_view text) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) names.emplace_back(item);
    pos = comma + 1;
  }
  if (names.empty()) return StepNames();
  return StepNames(std::move(names));
}

std::optional<StepNames::Match> StepNames::match(std::string_view name) const {
  for (const std::string& entry : names_) {
    if (!entry.empty() && entry.back() == '#') {
      if (name.size() <= entry.size() || name.substr(0, entry.size()) != entry) continue;
      std::string_view digits = name.substr(entry.size());
      int64_t number = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
      if (ec == std::errc() && end == digits.data() + digits.size()) return Match{number, true};
      continue;
    }
    if (name == entry) return Match{std::nullopt, false};
  }
  return std::nullopt;
}

}  // namespace fleetscope::agent
