// Commands that talk to the host daemon fleetscoped over its Thrift API (Unix socket by default,
// FLEETSCOPE_SOCKET or --socket to change it): status, jobs, trace, metrics.
#pragma once

#include <cstdint>
#include <optional>
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

// The lower bound `metrics --since AGE` asks the daemon for at `now_ns`: windows ending at or
// after now - AGE, or no bound at all (nullopt) for an AGE of 0 — as 0 is "no limit" for the
// CLI's other bounds (--timeout, --top, --memory-limit). `--since 0s` asked for windows ending
// at or after this instant, and printed "no metrics yet" however many there were.
// Throws std::invalid_argument for what parse_age refuses.
std::optional<int64_t> since_bound(const std::string& age, int64_t now_ns);

}  // namespace fleetscope::cli
