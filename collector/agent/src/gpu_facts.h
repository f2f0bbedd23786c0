// GPU facts for TARGET_INFO_GPU through the CUDA driver API of the driver the process already
// loaded (dlopen with RTLD_NOLOAD: the agent never loads a driver itself).
#pragma once

#include <string>
#include <vector>

#include "fleetscope/store/rows.h"

namespace fleetscope::agent {

// Empty (with `why` set) when the driver is not loaded or not initialized.
std::vector<store::GpuInfo> read_gpu_facts(std::string& why);

}  // namespace fleetscope::agent
