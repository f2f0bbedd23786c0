#include "fleetscope/sharer/host_planning.h"

namespace fleetscope::sharer {

HostPlanning host_planning(const std::string& config_path) {
  HostPlanning host;
  HostMemoryModel memory = host_memory_model(config_path);
  host.options.memory = memory.model;
  host.context_source = std::move(memory.context_source);
  host.interference = published_interference();
  host.options.interference = host.interference.model;
  return host;
}

}  // namespace fleetscope::sharer
