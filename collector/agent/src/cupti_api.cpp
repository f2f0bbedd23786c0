#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include <vector>

namespace fleetscope::agent {
namespace {

// A carried folder ships libcupti beside the agent; that copy wins over the toolkit's.
std::string beside_this_library(const char* file) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&beside_this_library), &info) == 0 || !info.dli_fname)
    return {};
  std::string self = info.dli_fname;
  auto slash = self.rfind('/');
  return slash == std::string::npos ? std::string(file) : self.substr(0, slash + 1) + file;
}

// The path of a libcupti already mapped into the process, or "".
std::string already_loaded_cupti() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* name = info->dlpi_name;
        if (!name || !*name) return 0;
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "libcupti.so", 11) != 0) return 0;
        *static_cast<std::string*>(data) = name;
        return 1;
      },
      &found);
  return found;
}

}  // namespace

std::string CuptiApi::load(const std::string& explicit_path) {
  std::vector<std::string> candidates;
  if (!explicit_path.empty()) {
    candidates.push_back(explicit_path);  // named by the user: that one or none
  } else {
    if (std::string loaded = already_loaded_cupti(); !loaded.empty()) candidates.push_back(loaded);
    if (std::string beside = beside_this_library("libcupti.so.13"); !beside.empty())
      candidates.push_back(beside);
#ifdef FLEETSCOPE_CUPTI_DEFAULT_PATH
    candidates.push_back(FLEETSCOPE_CUPTI_DEFAULT_PATH);
#endif
    candidates.push_back("libcupti.so.13");
    candidates.push_back("libcupti.so");
  }
  std::string errors;
  for (const std::string& candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      path = candidate;
      break;
    }
    const char* why = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(why ? why : candidate.c_str());
  }
  if (!handle) return "cannot load libcupti (" + errors + ")";

  std::string missing;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  resolve(activityEnable, "cuptiActivityEnable");
  resolve(activityDisable, "cuptiActivityDisable");
  resolve(activityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  resolve(activityFlushAll, "cuptiActivityFlushAll");
  resolve(activityGetNextRecord, "cuptiActivityGetNextRecord");
  resolve(activityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  resolve(activityEnableDriverApi, "cuptiActivityEnableDriverApi");
  resolve(getCallbackName, "cuptiGetCallbackName");
  resolve(getResultString, "cuptiGetResultString");
  resolve(setThreadIdType, "cuptiSetThreadIdType");
  resolve(getTimestamp, "cuptiGetTimestamp");
  resolve(subscribe, "cuptiSubscribe");
  resolve(unsubscribe, "cuptiUnsubscribe");
  resolve(enableCallback, "cuptiEnableCallback");
  resolve(enableDomain, "cuptiEnableDomain");
  resolve(finalize, "cuptiFinalize");
  resolve(getVersion, "cuptiGetVersion");
  if (!missing.empty()) {
    dlclose(handle);
    handle = nullptr;
    return path + " lacks " + missing;
  }
  // Activity records have the layout of the library that fills them; the translation is compiled
  // for this toolkit's major version (CUpti_ActivityKernel10, ...), so another major is refused.
  uint32_t version = 0;
  if (getVersion(&version) != CUPTI_SUCCESS || version / 10000 != CUPTI_API_VERSION / 10000) {
    handle = nullptr;  // the process keeps its own reference if it loaded this one itself
    return path + " has CUPTI API version " + std::to_string(version) + ", the agent needs " +
           std::to_string(CUPTI_API_VERSION / 10000) + ".x";
  }
  return {};
}

std::string CuptiApi::result_text(CUptiResult result) const {
  const char* text = nullptr;
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace fleetscope::agent
