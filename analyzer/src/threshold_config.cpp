#include "fleetscope/analyzer/threshold_config.h"

#include "fleetscope/common/text.h"

#include <cstdlib>
#include <fstream>

#include "fleetscope/store/error.h"
#include "fleetscope/store/unreadable_file.h"

namespace fleetscope::analyzer {

namespace {

using text::trim;

bool is_threshold_of(const Rule& rule, const std::string& name) {
  for (const Threshold& t : rule.thresholds())
    if (t.name == name) return true;
  return false;
}

std::string threshold_names(const Rule& rule) {
  std::string out;
  for (const Threshold& t : rule.thresholds()) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

}  // namespace

ThresholdOverrides parse_threshold_config(std::istream& in, const std::string& file_name) {
  const RuleRegistry& registry = RuleRegistry::builtin();
  ThresholdOverrides out;
  std::string section, raw;
  for (int line_number = 1; std::getline(in, raw); ++line_number) {
    const std::string position = "line " + std::to_string(line_number);
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        throw InputError(file_name, position, "expected '[RULE]', got '" + line + "'");
      section = trim(line.substr(1, line.size() - 2));
      if (!registry.find(section))
        throw InputError(file_name, position,
                         "unknown rule '" + section + "' (see fleetscope analyze --list-rules)");
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos)
      throw InputError(file_name, position,
                       "expected 'RULE.THRESHOLD = NUMBER' or 'THRESHOLD = NUMBER' after [RULE], "
                       "got '" +
                           line + "'");
    std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    std::string rule_id = section, name = key;
    if (const auto dot = key.find('.'); dot != std::string::npos) {
      rule_id = key.substr(0, dot);
      name = key.substr(dot + 1);
    }
    if (rule_id.empty())
      throw InputError(
          file_name, position,
          "'" + key + "' names no rule: write RULE." + key + " or put it under [RULE]");
    const Rule* rule = registry.find(rule_id);
    if (!rule)
      throw InputError(file_name, position,
                       "unknown rule '" + rule_id + "' (see fleetscope analyze --list-rules)");
    if (!is_threshold_of(*rule, name))
      throw InputError(file_name, position,
                       "rule " + rule_id + " has no threshold '" + name +
                           "' (it has: " + threshold_names(*rule) + ")");
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0')
      throw InputError(file_name, position, "expected a number after '=', got '" + value + "'");
    out[rule_id + "." + name] = number;
  }
  return out;
}

ThresholdOverrides read_threshold_config(const std::string& path) {
  // A FIFO is named, not read (its read waited for a writer for ever); a directory read as an
  // empty config, so --config DIR changed nothing without a word.
  if (auto problem =
          common::input_problem(path, "a threshold config file (RULE.THRESHOLD = VALUE)"))
    throw unreadable_file(path, *problem);
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the threshold config file");
  return parse_threshold_config(in, path);
}

}  // namespace fleetscope::analyzer
