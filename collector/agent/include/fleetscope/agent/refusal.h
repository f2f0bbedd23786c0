// Why the agent refused or ended a window, as one line of text that a control source relays to
// whoever asked (the daemon passes it on to `fleetscope trace`). Every text starts with a stable
// keyword ("another-cupti-subscriber: ...") so callers can match on it.
#pragma once

#include <string>

namespace fleetscope::agent::refusal {

// CUPTI allows one subscriber per process; another tool (torch.profiler/Kineto, Nsight Systems,
// another agent) holds it. The agent leaves that tool's tracing untouched.
std::string another_subscriber(const std::string& cupti_result);
// A window is already open or waiting for its start.
std::string window_already_open();
std::string no_window_open();
std::string cupti_unavailable(const std::string& why);
std::string output_unavailable(const std::string& why);
std::string cannot_start_tracing(const std::string& why);
// This process was forked from a traced one without exec: it has the agent's state but none of
// its threads, and does not trace.
std::string forked_child();
std::string bad_request(const std::string& why);

}  // namespace fleetscope::agent::refusal
