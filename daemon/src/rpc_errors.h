// The Thrift exceptions RpcHandler's calls answer with, shared by its translation units
// (rpc_handler.cpp, rpc_sharing.cpp). Internal to the daemon library.
#pragma once

#include <string>

#include "fleetscope_types.h"

namespace fleetscope::daemon::rpc_errors {

[[noreturn]] inline void invalid(const std::string& message, const std::string& field) {
  rpc::InvalidRequest error;
  error.message = message;
  error.__set_field(field);
  throw error;
}

[[noreturn]] inline void denied(const std::string& message) {
  rpc::PermissionDenied error;
  error.message = message;
  throw error;
}

}  // namespace fleetscope::daemon::rpc_errors
