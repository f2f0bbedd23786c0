// Small helpers shared by the importers (internal).
#pragma once

#include <string>

namespace fleetscope::importers {

// "…/hta-rank-0.json.gz" → "hta-rank-0": the workflow name given to an imported file.
std::string file_stem(const std::string& path);

}  // namespace fleetscope::importers
