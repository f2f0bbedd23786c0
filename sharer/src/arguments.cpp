#include "arguments.h"

#include <cmath>

namespace fleetscope::sharer {

Arguments::Arguments(const std::vector<std::string>& args, const std::set<std::string>& valued,
                     const std::set<std::string>& switches) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    std::string flag = arg;
    std::optional<std::string> value;
    if (const size_t equals = arg.find('='); equals != std::string::npos) {
      flag = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    }
    if (switches.count(flag)) {
      if (value) throw UsageError(flag + " takes no value");
      values_[flag] = "";
    } else if (valued.count(flag)) {
      if (!value) {
        if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
        value = args[++i];
      }
      // One value per option, as in common/args.h: a second, different one was silently taken
      // (`sim --gpus 8 --gpus 2` simulated 2 GPUs).
      if (auto given = values_.find(flag); given != values_.end() && given->second != *value)
        throw UsageError(flag + " given twice ('" + given->second + "', then '" + *value +
                         "'): give it once");
      values_[flag] = *value;
    } else {
      throw UsageError("unknown option " + flag);
    }
  }
}

std::optional<std::string> Arguments::get(const std::string& flag) const {
  auto found = values_.find(flag);
  if (found == values_.end()) return std::nullopt;
  return found->second;
}

std::string Arguments::get_or(const std::string& flag, const std::string& fallback) const {
  return get(flag).value_or(fallback);
}

double Arguments::number(const std::string& flag, double fallback) const {
  auto text = get(flag);
  if (!text) return fallback;
  try {
    size_t used = 0;
    const double value = std::stod(*text, &used);
    // NaN and infinities are never meaningful flag values (an infinite alpha kept `sim` busy
    // for ever).
    if (used == text->size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
    // reported below
  }
  throw UsageError(flag + " expects a finite number, got '" +
                   (text->size() > 40 ? text->substr(0, 40) + "..." : *text) + "'");
}

}  // namespace fleetscope::sharer
