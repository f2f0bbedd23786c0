// The daemon as a control source and a record sink of the agent (control_source.h,
// record_sink.h): the agent registers with fleetscoped through the agent link (collector/
// agent_link: Thrift's binary protocol over the daemon's agent socket, with the link's own codec
// so that the injection library gains no shared-library dependency), takes its window orders, and
// streams the
// window's rows to it in record batches, each committed by the daemon before the next is sent: no
// SQLite inside the job.
//
// Threads: the link's own thread long-polls the daemon and hands orders over through an eventfd
// (poll_fd); everything else runs on the agent's control thread, as the interfaces require.
// Settings: FLEETSCOPE_AGENT_SOCKET names the daemon's agent socket (default
// /run/fleetscope/agent.sock); "off" disables the link.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fleetscope/agent/control_source.h"
#include "fleetscope/agent/record_sink.h"
#include "fleetscope/agent_link/batch_builder.h"
#include "fleetscope/agent_link/link_client.h"

namespace fleetscope::agent {

class DaemonRecordSink;

class DaemonControl final : public ControlSource {
 public:
  using Log = std::function<void(const std::string&)>;
  // nullptr when FLEETSCOPE_AGENT_SOCKET is "off".
  static std::unique_ptr<DaemonControl> from_environment(Log log);
  DaemonControl(agent_link::LinkOptions options, Log log);
  ~DaemonControl() override;

  void start(WindowController& controller) override;
  int poll_fd() const override { return event_fd_; }
  void on_readable(WindowController& controller) override;
  void window_ended(const WindowReport& report) override;
  const char* name() const override { return "daemon"; }

  // For the sink (control thread): the capture the daemon opened the current window for.
  std::optional<int64_t> window_capture() const { return capture_; }
  // How many times the daemon connection was lost. A window belongs to the connection it was
  // ordered on: a daemon that restarted has closed the capture itself (at its last committed
  // row), so batches and the end of that window are not sent to the new one.
  int64_t link_epoch() const { return link_epoch_.load(); }
  agent_link::ControlLoop& link() { return *loop_; }
  const std::string& socket_path() const { return options_.socket_path; }
  // The sink's final numbers for the window (sent to the daemon when the window is reported).
  void set_final_counts(int64_t dropped, int64_t overhead_ns) {
    final_dropped_ = dropped;
    final_overhead_ns_ = overhead_ns;
  }

 private:
  void send_closed(int64_t capture_id, int64_t dropped, int64_t overhead_ns,
                   const std::string& error);

  agent_link::LinkOptions options_;
  Log log_;
  int event_fd_ = -1;
  std::unique_ptr<agent_link::ControlLoop> loop_;
  std::mutex mutex_;  // orders_ (filled by the link thread)
  std::deque<agent_link::Order> orders_;
  std::optional<int64_t> capture_;
  std::atomic<int64_t> link_epoch_{0};  // bumped by the link thread on each disconnection
  int64_t window_epoch_ = 0;            // link_epoch() when the current window was ordered
  std::optional<int64_t> final_dropped_, final_overhead_ns_;
  std::shared_ptr<DaemonRecordSink> sink_;  // given to every window the daemon orders
};

// The rows of a daemon-ordered window, streamed to fleetscoped in batches.
class DaemonRecordSink final : public RecordSink,
                               private store::UniformEventSink<DaemonRecordSink> {
 public:
  explicit DaemonRecordSink(DaemonControl& control) : control_(control) {}
  int64_t begin(const WindowStart& start) override;
  RowSink& rows() override { return *this; }
  void commit() override;
  void end(const WindowEnd& end) override;
  void end_partial(const WindowEnd& end) override;
  std::string destination() const override;

 private:
  friend class store::UniformEventSink<DaemonRecordSink>;
  template <class Row>
  void put(const Row& row) {
    builder_->add(row);
    if (builder_->full()) send();
  }
  void send();

  DaemonControl& control_;
  int64_t capture_id_ = 0;
  std::unique_ptr<agent_link::BatchBuilder> builder_;
  int64_t unsent_rows_ = 0;  // rows the daemon refused or never got
  int64_t epoch_ = 0;        // the control's link_epoch() at begin()
};

}  // namespace fleetscope::agent
