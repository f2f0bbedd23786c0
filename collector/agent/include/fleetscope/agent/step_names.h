// Which NVTX ranges mark training iterations. Defaults follow PyTorch (`ProfilerStep#N`, emitted by
// torch.profiler's step annotations) and the plain `step` range our samples use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fleetscope::agent {

// An entry ending in '#' matches the prefix followed by a decimal step number ("ProfilerStep#" ~
// "ProfilerStep#12"); any other entry matches the whole name exactly.
class StepNames {
 public:
  StepNames() : StepNames(std::vector<std::string>{"ProfilerStep#", "step"}) {}
  explicit StepNames(std::vector<std::string> names) : names_(std::move(names)) {}
  // Comma-separated list, e.g. "ProfilerStep#,step,train_iter". Empty text = defaults.
  static StepNames parse(std::string_view text);

  struct Match {
    std::optional<int64_t> number;  // N of "ProfilerStep#N"; none for exact-name matches
    bool numbered_prefix = false;   // matched an entry ending in '#'
  };
  std::optional<Match> match(std::string_view name) const;
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

}  // namespace fleetscope::agent
