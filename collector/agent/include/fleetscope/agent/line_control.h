// A control source reading text commands (control_command.h) from a FIFO, for operators and
// scripts: `mkfifo /tmp/ctl; FLEETSCOPE_CONTROL_FIFO=/tmp/ctl python train.py &` then
// `echo "open duration-ms=2000" > /tmp/ctl`. Replies ("ok: ...", "refused: ...") and window ends
// ("ended: ...") are appended to FLEETSCOPE_CONTROL_REPLY when set, one line each.
//
// The FIFO is opened read-write and non-blocking, so the agent's control thread never waits on it
// and the FIFO never reports end-of-file when a writer goes away.
#pragma once

#include <string>

#include "fleetscope/agent/control_source.h"
#include "fleetscope/agent/environment_control.h"

namespace fleetscope::agent {

class LineControl final : public ControlSource {
 public:
  LineControl(std::string fifo_path, std::string reply_path, LogFn log);
  ~LineControl() override;
  void start(WindowController& controller) override;
  int poll_fd() const override { return fd_; }
  void on_readable(WindowController& controller) override;
  void window_ended(const WindowReport& report) override;
  const char* name() const override { return "fifo"; }

  // One command line in, one reply line out (no newline); public for tests.
  static std::string execute(std::string_view line, WindowController& controller);

 private:
  void reply(const std::string& line);

  std::string fifo_path_, reply_path_;
  LogFn log_;
  int fd_ = -1;
  std::string pending_;  // a partial line read so far
};

}  // namespace fleetscope::agent
