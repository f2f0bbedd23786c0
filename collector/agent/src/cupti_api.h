// The CUPTI entry points the agent uses, resolved with dlsym from a libcupti opened with dlopen:
// the agent must not carry a DT_NEEDED on libcupti (the process would see the dependency and fail
// to start where CUPTI is missing).
#pragma once

#include <cupti.h>

#include <string>

namespace fleetscope::agent {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;
  decltype(&cuptiActivityEnable) activityEnable = nullptr;
  decltype(&cuptiActivityDisable) activityDisable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activityRegisterCallbacks = nullptr;
  decltype(&cuptiActivityFlushAll) activityFlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) activityGetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activityGetNumDroppedRecords = nullptr;
  decltype(&cuptiActivityEnableDriverApi) activityEnableDriverApi = nullptr;
  decltype(&cuptiGetCallbackName) getCallbackName = nullptr;
  decltype(&cuptiGetResultString) getResultString = nullptr;
  decltype(&cuptiSetThreadIdType) setThreadIdType = nullptr;
  decltype(&cuptiGetTimestamp) getTimestamp = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enableCallback = nullptr;
  decltype(&cuptiEnableDomain) enableDomain = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
  decltype(&cuptiGetVersion) getVersion = nullptr;

  // Loads libcupti: the explicit path if given; else a libcupti the process already loaded (e.g.
  // PyTorch's), so that the agent and any other CUPTI user in the process share one CUPTI and its
  // one-subscriber rule; else the copy beside the agent, the toolkit's, the loader's search.
  // Returns an empty string on success, otherwise what went wrong.
  std::string load(const std::string& explicit_path);
  // The libcupti load() would pick now, found without loading a new library (a copy the process
  // already mapped is checked, then released); empty when none is usable. NVTX must send its
  // ranges to this copy, or the agent's step callbacks never fire.
  static std::string preferred_path(const std::string& explicit_path);
  std::string result_text(CUptiResult result) const;

 private:
  std::string try_load(const std::string& candidate);
};

}  // namespace fleetscope::agent
