// An input file that cannot be used at all (missing, a directory, a file of another kind) as the
// InputError every reader catches, in the one wording of common/file_errors.h:
// "cannot read FILE: REASON".
#pragma once

#include <string>

#include "fleetscope/common/file_errors.h"
#include "fleetscope/store/error.h"

namespace fleetscope {

inline InputError unreadable_file(const std::string& path, const std::string& reason) {
  return InputError(common::cannot_read_subject(path), "", reason);
}

}  // namespace fleetscope
