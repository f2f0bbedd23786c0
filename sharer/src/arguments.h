#pragma once
// Command-line arguments of the sharer's subcommands: `--flag value`, `--flag=value`, bare
// `--flag` switches, and positional arguments. Unknown flags are usage errors.

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetscope::sharer {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Arguments {
 public:
  // `valued` flags take a value; `switches` do not. Throws UsageError.
  Arguments(const std::vector<std::string>& args, const std::set<std::string>& valued,
            const std::set<std::string>& switches);

  bool has(const std::string& flag) const { return values_.count(flag) > 0; }
  std::optional<std::string> get(const std::string& flag) const;
  std::string get_or(const std::string& flag, const std::string& fallback) const;
  double number(const std::string& flag, double fallback) const;  // UsageError if not a number
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace fleetscope::sharer
