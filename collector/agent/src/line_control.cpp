#include "fleetscope/agent/line_control.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include "fleetscope/agent/control_command.h"
#include "fleetscope/agent/refusal.h"

namespace fleetscope::agent {

LineControl::LineControl(std::string fifo_path, std::string reply_path, LogFn log)
    : fifo_path_(std::move(fifo_path)), reply_path_(std::move(reply_path)), log_(std::move(log)) {}

LineControl::~LineControl() {
  if (fd_ >= 0) ::close(fd_);
}

void LineControl::start(WindowController& /*controller*/) {
  fd_ = ::open(fifo_path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) log_("cannot open control FIFO " + fifo_path_ + ": " + std::strerror(errno));
}

std::string LineControl::execute(std::string_view line, WindowController& controller) {
  ControlCommand command = parse_control_command(line);
  if (auto* open = std::get_if<OpenCommand>(&command)) {
    WindowRequest request = open->request;
    request.requester = "fifo";
    return format_reply(controller.open_window(request));
  }
  if (std::holds_alternative<CloseCommand>(command))
    return format_reply(controller.close_window());
  if (std::holds_alternative<StatusCommand>(command)) {
    WindowPhase phase = controller.phase();
    return std::string("ok: ") + (phase == WindowPhase::open      ? "open"
                                  : phase == WindowPhase::waiting ? "waiting"
                                                                  : "idle");
  }
  return format_reply({false, refusal::bad_request(std::get<BadCommand>(command).why)});
}

void LineControl::on_readable(WindowController& controller) {
  char buffer[512];
  for (;;) {
    ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0) break;
    pending_.append(buffer, static_cast<size_t>(n));
    if (pending_.size() > 4096) pending_.clear();  // not a command stream; start over
  }
  for (size_t newline; (newline = pending_.find('\n')) != std::string::npos;) {
    std::string line = pending_.substr(0, newline);
    pending_.erase(0, newline + 1);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    reply(execute(line, controller));
  }
}

void LineControl::window_ended(const WindowReport& report) {
  reply("ended: capture " + std::to_string(report.capture_id) + " in " + report.destination +
        ", " + std::to_string(report.rows) + " rows, " + std::to_string(report.dropped_records) +
        " dropped, " + (report.complete ? "complete" : "partial") +
        (report.note.empty() ? "" : " (" + report.note + ")"));
}

void LineControl::reply(const std::string& line) {
  if (reply_path_.empty()) return;
  int fd = ::open(reply_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string text = line + "\n";
  ssize_t ignored = ::write(fd, text.data(), text.size());  // one write: lines never interleave
  (void)ignored;
  ::close(fd);
}

}  // namespace fleetscope::agent
