// Commands that talk to the host daemon fleetscoped over its Thrift API (Unix socket by default,
// FLEETSCOPE_SOCKET or --socket to change it): status, jobs, trace, metrics.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::cli {

// Default API socket; FLEETSCOPE_SOCKET overrides it, --socket wins.
inline constexpr const char* kDefaultDaemonSocket = "/run/fleetscope/fleetscoped.sock";

int run_status_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_jobs_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_trace_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_metrics_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// "90s", "10m", "2h", "1d" (or plain seconds) -> ns; throws std::invalid_argument otherwise.
int64_t parse_age(const std::string& text);

}  // namespace fleetscope::cli
