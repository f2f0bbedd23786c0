#include "daemon_control.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "fleetscope/agent/refusal.h"

namespace fleetscope::agent {

std::unique_ptr<DaemonControl> DaemonControl::from_environment(Log log) {
  agent_link::LinkOptions options;
  if (const char* socket = std::getenv("FLEETSCOPE_AGENT_SOCKET"); socket && *socket) {
    if (std::string(socket) == "off") return nullptr;
    options.socket_path = socket;
  }
  return std::make_unique<DaemonControl>(options, std::move(log));
}

DaemonControl::DaemonControl(agent_link::LinkOptions options, Log log)
    : options_(std::move(options)), log_(std::move(log)) {
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

DaemonControl::~DaemonControl() {
  if (loop_) loop_->stop();
  if (event_fd_ >= 0) close(event_fd_);
}

void DaemonControl::start(WindowController& /*controller*/) {
  if (event_fd_ < 0) {
    log_("daemon link off: cannot create an event descriptor");
    return;
  }
  agent_link::ControlLoop::Callbacks callbacks;
  callbacks.on_order = [this](const agent_link::Order& order) {
    {
      std::lock_guard lock(mutex_);
      orders_.push_back(order);
    }
    uint64_t one = 1;
    ssize_t ignored = write(event_fd_, &one, sizeof one);
    (void)ignored;
  };
  callbacks.on_disconnected = [this] {
    // Wakes the control thread: a window of the lost daemon ends now (on_readable).
    link_epoch_.fetch_add(1);
    uint64_t one = 1;
    ssize_t ignored = write(event_fd_, &one, sizeof one);
    (void)ignored;
  };
  loop_ = std::make_unique<agent_link::ControlLoop>(options_, agent_link::read_process_facts(),
                                                    callbacks);
  loop_->start();
}

void DaemonControl::send_closed(int64_t capture_id, int64_t dropped, int64_t overhead_ns,
                                const std::string& error) {
  agent_link::WindowClosed closed;
  closed.capture_id = capture_id;
  closed.dropped_records = dropped;
  closed.collector_overhead_ns = overhead_ns;
  closed.error = error;
  if (!loop_->window_closed(closed))
    log_("could not tell fleetscoped the window ended: " + loop_->last_error());
}

void DaemonControl::on_readable(WindowController& controller) {
  uint64_t count = 0;
  ssize_t ignored = read(event_fd_, &count, sizeof count);
  (void)ignored;
  std::deque<agent_link::Order> orders;
  {
    std::lock_guard lock(mutex_);
    orders.swap(orders_);
  }
  // The daemon that ordered the open window went away: end the window here. Its rows so far were
  // committed by that daemon, which closes the capture when it starts again.
  if (capture_ && window_epoch_ != link_epoch() && controller.phase() != WindowPhase::idle)
    controller.close_window();
  for (const auto& order : orders) {
    if (order.kind == agent_link::Order::open_window) {
      if (controller.phase() != WindowPhase::idle) {
        send_closed(order.capture_id, 0, 0, refusal::window_already_open());
        continue;
      }
      WindowRequest request;
      request.duration_ms = order.duration_ms.value_or(0);
      request.iterations = order.iterations.value_or(0);
      request.start_at_next_step = request.iterations > 0;
      request.requester = "daemon";
      // The window's rows stream to the daemon instead of the standalone file.
      if (!sink_) sink_ = std::make_shared<DaemonRecordSink>(*this);
      request.sink = sink_;
      capture_ = order.capture_id;
      window_epoch_ = link_epoch();
      final_dropped_.reset();
      final_overhead_ns_.reset();
      WindowReply reply = controller.open_window(request);
      if (!reply.accepted && capture_ == order.capture_id) {
        capture_.reset();
        send_closed(order.capture_id, 0, 0, reply.reason);
      }
    } else if (order.kind == agent_link::Order::close_window) {
      if (capture_ && *capture_ == order.capture_id && controller.phase() != WindowPhase::idle)
        controller.close_window();
    }
  }
}

void DaemonControl::window_ended(const WindowReport& report) {
  if (!capture_ || report.capture_id != *capture_) return;  // another source's window
  int64_t capture = *capture_;
  capture_.reset();
  if (window_epoch_ != link_epoch()) {
    log_("fleetscoped restarted during the window of capture " + std::to_string(capture) +
         ": the window ended; the daemon closes that capture at its last committed row");
    return;  // the new daemon never opened this window: nothing to tell it
  }
  send_closed(capture, final_dropped_.value_or(report.dropped_records),
              final_overhead_ns_.value_or(0), report.complete ? std::string() : report.note);
}

int64_t DaemonRecordSink::begin(const WindowStart& /*start*/) {
  auto capture = control_.window_capture();
  if (!capture) throw std::runtime_error("no window was ordered by fleetscoped");
  capture_id_ = *capture;
  builder_ = std::make_unique<agent_link::BatchBuilder>(
      capture_id_, static_cast<size_t>(control_.link().max_batch_rows()));
  unsent_rows_ = 0;
  epoch_ = control_.link_epoch();
  return capture_id_;
}

void DaemonRecordSink::send() {
  agent_link::EncodedBatch batch = builder_->take();
  if (epoch_ != control_.link_epoch()) {  // the daemon of this window is gone
    unsent_rows_ += static_cast<int64_t>(batch.rows);
    throw std::runtime_error("fleetscoped restarted mid-window (capture " +
                             std::to_string(capture_id_) + " ends at its last committed batch)");
  }
  if (control_.link().push(batch)) return;
  unsent_rows_ += static_cast<int64_t>(batch.rows);
  // The agent ends the window and counts what it holds as dropped; the daemon commits and keeps
  // every batch it took before (pushRecords answered).
  throw std::runtime_error("fleetscoped did not take a record batch: " +
                           control_.link().last_error());
}

void DaemonRecordSink::commit() {
  if (builder_ && !builder_->empty()) send();
}

void DaemonRecordSink::end(const WindowEnd& end) {
  for (const auto& gpu : end.gpus) builder_->add_gpu(gpu);
  commit();
  control_.set_final_counts(end.capture.dropped_records + unsent_rows_,
                            end.capture.collector_overhead_ns);
}

void DaemonRecordSink::end_partial(const WindowEnd& end) {
  try {
    commit();
  } catch (const std::exception&) {
    // Ending anyway: every batch the daemon took before is committed and stays.
  }
  control_.set_final_counts(end.capture.dropped_records + unsent_rows_,
                            end.capture.collector_overhead_ns);
}

std::string DaemonRecordSink::destination() const {
  return "fleetscoped capture " + std::to_string(capture_id_) + " (" + control_.socket_path() + ")";
}

}  // namespace fleetscope::agent
