#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
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

// The libcupti copies already mapped into the process (PyTorch maps its own), in load order.
std::vector<std::string> already_loaded_cupti() {
  std::vector<std::string> found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* name = info->dlpi_name;
        if (!name || !*name) return 0;
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "libcupti.so", 11) == 0)
          static_cast<std::vector<std::string>*>(data)->push_back(name);
        return 0;
      },
      &found);
  return found;
}

// Where load() looks, in order: the explicit path alone if given; else a libcupti the process
// already mapped, the copy beside the agent, the toolkit's, then the loader's search.
std::vector<std::string> candidates(const std::string& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};  // named by the user: that one or none
  std::vector<std::string> list = already_loaded_cupti();
  if (std::string beside = beside_this_library("libcupti.so.13"); !beside.empty())
    list.push_back(beside);
#ifdef FLEETSCOPE_CUPTI_DEFAULT_PATH
  list.push_back(FLEETSCOPE_CUPTI_DEFAULT_PATH);
#endif
  list.push_back("libcupti.so.13");
  list.push_back("libcupti.so");
  return list;
}

}  // namespace

std::string CuptiApi::load(const std::string& explicit_path) {
  // The first candidate that loads, has every entry point and the right major version wins.
  std::string errors;
  for (const std::string& candidate : candidates(explicit_path)) {
    std::string why = try_load(candidate);
    if (why.empty()) return {};
    errors += (errors.empty() ? "" : "; ") + why;
  }
  return "cannot load libcupti (" + errors + ")";
}

std::string CuptiApi::preferred_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  const std::vector<std::string> mapped = already_loaded_cupti();
  for (const std::string& candidate : candidates(explicit_path)) {
    if (std::find(mapped.begin(), mapped.end(), candidate) != mapped.end()) {
      CuptiApi probe;  // mapped by the process itself: checking it loads nothing new
      if (probe.try_load(candidate).empty()) {
        dlclose(probe.handle);
        return candidate;
      }
    } else if (candidate.find('/') != std::string::npos && access(candidate.c_str(), R_OK) == 0) {
      return candidate;  // a file not loaded yet: existence only (loading waits for start())
    }
  }
  return {};  // only the loader's search is left: NVTX cannot be pointed at it by path
}

std::string CuptiApi::try_load(const std::string& candidate) {
  handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return why ? std::string(why) : candidate + ": cannot be opened";
  }
  path = candidate;
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
  std::string why;
  uint32_t version = 0;
  if (!missing.empty()) {
    why = candidate + " lacks " + missing;
  } else if (getVersion(&version) != CUPTI_SUCCESS ||
             version / 10000 != CUPTI_API_VERSION / 10000) {
    // Activity records have the layout of the library that fills them; the translation is
    // compiled for this toolkit's major version (CUpti_ActivityKernel10, ...).
    why = candidate + " has CUPTI API version " + std::to_string(version) + ", the agent needs " +
          std::to_string(CUPTI_API_VERSION / 10000) + ".x";
  }
  if (why.empty()) return {};
  dlclose(handle);  // drops our reference; a copy the process loaded itself stays loaded
  *this = CuptiApi{};
  return why;
}

std::string CuptiApi::result_text(CUptiResult result) const {
  const char* text = nullptr;
  if (getResultString && getResultString(result, &text) == CUPTI_SUCCESS && text) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

}  // namespace fleetscope::agent
