// CUDA runtime calls the agent does not store: queries that programs (and frameworks) make by
// the thousand and that say nothing about GPU work. The default list is Kineto's
// (libkineto CuptiActivityProfiler.cpp, isBlockListedRuntimeCbid: cudaGetDevice, cudaSetDevice,
// cudaGetLastError, cudaEventCreate, cudaEventCreateWithFlags, cudaEventDestroy).
// FLEETSCOPE_RUNTIME_FILTER (and `fleetscope run --runtime-filter`) replaces it with a
// comma-separated list of runtime API names without version suffix; "none" keeps every call.
// Filtered records are counted (TranslationStats::filtered), neither stored nor dropped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace fleetscope::agent {

// Plain runtime API names (no CUPTI version suffix).
extern const std::vector<std::string> kDefaultFilteredRuntimeCalls;

class RuntimeFilter {
 public:
  RuntimeFilter();  // the default list
  explicit RuntimeFilter(std::vector<std::string> names);
  // Comma-separated names; empty or "none" = keep everything; "default" = the default list.
  static RuntimeFilter parse(std::string_view text);

  bool empty() const { return names_.empty(); }
  bool drops(std::string_view plain_name) const;
  // Name of a runtime callback id when CUPTI cannot tell (tests, the fake source): the calls of
  // the default list and a few other frequent queries; "" otherwise.
  static std::string known_name(uint32_t cbid);
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_set<std::string> lookup_;
};

}  // namespace fleetscope::agent
