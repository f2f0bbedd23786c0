// Merges the databases written by each traced process into one (captures renumbered, strings
// re-interned), written atomically.
#pragma once

#include <string>
#include <vector>

namespace fleetscope::launcher {

struct MergeResult {
  int captures = 0;
  long long kernels = 0, memcpys = 0, memsets = 0;
};

// Throws fleetscope::Error (or InputError naming the part) on failure; `output` is then untouched.
MergeResult merge_parts(const std::vector<std::string>& parts, const std::string& output);

}  // namespace fleetscope::launcher
