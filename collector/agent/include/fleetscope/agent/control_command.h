// The text form of control requests, one per line, used by the FIFO control source and meant for
// any line-based link:
//   open [delay-ms=N] [duration-ms=N] [iterations=N] [at-next-step]
//   close
//   status
// Replies are one line: "ok: ..." or "refused: <refusal text>" (refusal.h).
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "fleetscope/agent/control_source.h"

namespace fleetscope::agent {

struct OpenCommand {
  WindowRequest request;
};
struct CloseCommand {};
struct StatusCommand {};
struct BadCommand {
  std::string why;  // names the word that was not understood
};
using ControlCommand = std::variant<OpenCommand, CloseCommand, StatusCommand, BadCommand>;

ControlCommand parse_control_command(std::string_view line);
std::string format_reply(const WindowReply& reply);

}  // namespace fleetscope::agent
