#include "fleetscope/agent/refusal.h"

namespace fleetscope::agent::refusal {

std::string another_subscriber(const std::string& cupti_result) {
  return "another-cupti-subscriber: another CUPTI user (torch.profiler/Kineto, Nsight Systems or "
         "another agent) holds this process's CUPTI subscription (" +
         cupti_result + "); its tracing is left untouched";
}
std::string window_already_open() {
  return "window-already-open: a trace window is already open or waiting in this process";
}
std::string no_window_open() {
  return "no-window-open: there is no trace window to close";
}
std::string cupti_unavailable(const std::string& why) {
  return "cupti-unavailable: " + why;
}
std::string output_unavailable(const std::string& why) {
  return "output-unavailable: " + why;
}
std::string cannot_start_tracing(const std::string& why) {
  return "cannot-start-tracing: " + why;
}
std::string forked_child() {
  return "forked-child: this process was forked without exec from a traced process and does not "
         "trace";
}
std::string bad_request(const std::string& why) {
  return "bad-request: " + why;
}

}  // namespace fleetscope::agent::refusal
