#include "fleetscope/agent/runtime_filter.h"

#include <cupti_runtime_cbid.h>

#include <utility>

namespace fleetscope::agent {

const std::vector<std::string> kDefaultFilteredRuntimeCalls = {
    "cudaGetDevice",   "cudaSetDevice",           "cudaGetLastError",
    "cudaEventCreate", "cudaEventCreateWithFlags", "cudaEventDestroy"};

RuntimeFilter::RuntimeFilter() : RuntimeFilter(kDefaultFilteredRuntimeCalls) {}

RuntimeFilter::RuntimeFilter(std::vector<std::string> names) : names_(std::move(names)) {
  lookup_.insert(names_.begin(), names_.end());
}

RuntimeFilter RuntimeFilter::parse(std::string_view text) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  if (text.empty() || text == "default") return RuntimeFilter();
  if (text == "none") return RuntimeFilter(std::vector<std::string>{});
  std::vector<std::string> names;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view name = trim(text.substr(0, comma));
    if (!name.empty()) names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return RuntimeFilter(std::move(names));
}

bool RuntimeFilter::drops(std::string_view plain_name) const {
  return !lookup_.empty() && lookup_.count(std::string(plain_name)) > 0;
}

std::string RuntimeFilter::known_name(uint32_t cbid) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
      return "cudaGetDevice";
    case CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020:
      return "cudaSetDevice";
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
      return "cudaGetLastError";
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020:
      return "cudaEventCreate";
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020:
      return "cudaEventCreateWithFlags";
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
      return "cudaEventDestroy";
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
      return "cudaEventQuery";
    case CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020:
      return "cudaPeekAtLastError";
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020:
      return "cudaGetDeviceCount";
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
      return "cudaStreamQuery";
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      return "cudaLaunchKernel";
    default:
      return {};
  }
}

}  // namespace fleetscope::agent
