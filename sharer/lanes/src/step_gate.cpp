#include "fleetscope/lanes/step_gate.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fleetscope/lanes/lane_segment.h"

namespace fleetscope::lanes {

GateClient::~GateClient() {
  close();
}

void GateClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

bool GateClient::send_all(const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = ::send(fd_, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool GateClient::read_line(std::string* line) {
  for (;;) {
    size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    if (buffer_.size() > kMaxGateLine) return false;
    char chunk[128];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

bool GateClient::connect(const std::string& socket_path, const GateHello& hello,
                         std::string* error) {
  close();
  sockaddr_un address{};
  if (socket_path.empty() || socket_path.size() >= sizeof(address.sun_path)) {
    *error = "gate socket path '" + socket_path + "' is empty or too long";
    return false;
  }
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *error = socket_path + ": " + std::strerror(errno);
    close();
    return false;
  }
  std::string reply;
  if (!send_all(format_hello(hello)) || !read_line(&reply)) {
    *error = socket_path + ": the arbiter closed the connection";
    close();
    return false;
  }
  if (reply != "WELCOME") {
    *error = socket_path + ": " + reply;
    close();
    return false;
  }
  return true;
}

bool GateClient::request_turn(uint64_t remaining_ns) {
  if (fd_ < 0 || !send_all(format_next(remaining_ns))) return false;
  std::string line;
  while (read_line(&line)) {
    if (line == "GO") return true;
  }
  return false;
}

bool GateClient::release() {
  return fd_ >= 0 && send_all(format_release());
}

StepGate::StepGate(StepGateSettings settings, LaneSegment* segment, int slot,
                   std::function<void()> before_handover)
    : settings_(std::move(settings)),
      segment_(segment),
      slot_(slot),
      before_handover_(std::move(before_handover)) {
  if (settings_.socket_path.empty()) open_ = true;
}

bool StepGate::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

uint64_t StepGate::boundaries() const {
  std::lock_guard lock(mutex_);
  return boundaries_;
}

uint64_t StepGate::handovers() const {
  std::lock_guard lock(mutex_);
  return handovers_;
}

void StepGate::set_total_steps(uint64_t total_steps) {
  std::lock_guard lock(mutex_);
  settings_.total_steps = total_steps;
}

void StepGate::open_gate_locked() {
  open_ = true;
  holding_ = false;
  client_.close();
  if (segment_) segment_->set_waiting(slot_, false);
}

bool StepGate::ensure_connected_locked() {
  if (client_.connected()) return true;
  if (tried_connect_) return false;
  tried_connect_ = true;
  GateHello hello;
  hello.lane_id = settings_.lane_id;
  hello.pid = ::getpid();
  hello.priority = settings_.priority;
  std::string error;
  return client_.connect(settings_.socket_path, hello, &error);
}

uint64_t StepGate::remaining_estimate_locked() const {
  if (settings_.total_steps == 0 || step_ns_average_ <= 0) return 0;
  uint64_t left = settings_.total_steps > boundaries_ ? settings_.total_steps - boundaries_ : 1;
  return static_cast<uint64_t>(static_cast<double>(left) * step_ns_average_) + 1;
}

void StepGate::boundary() {
  std::lock_guard lock(mutex_);
  ++boundaries_;
  if (segment_) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);  // vDSO: no system call
    segment_->record_step(slot_, static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u +
                                     static_cast<uint64_t>(now.tv_nsec));
  }
  if (open_) return;
  if (holding_) {
    // Fast path: the turn stays here while nobody else waits.
    if (segment_ && !segment_->others_waiting(slot_)) return;
    auto held = std::chrono::duration<double, std::nano>(Clock::now() - turn_start_).count();
    step_ns_average_ = step_ns_average_ <= 0 ? held : 0.8 * step_ns_average_ + 0.2 * held;
  }
  if (!ensure_connected_locked()) {
    open_gate_locked();
    return;
  }
  if (holding_ && before_handover_) before_handover_();
  ++handovers_;
  if (segment_) segment_->set_waiting(slot_, true);
  bool granted = client_.request_turn(remaining_estimate_locked());
  if (segment_) segment_->set_waiting(slot_, false);
  if (!granted) {
    open_gate_locked();
    return;
  }
  holding_ = true;
  turn_start_ = Clock::now();
  // A waiting bit left by a member that was killed while it waited would send every boundary of
  // ours to the arbiter; clear such bits, at most once a second.
  if (segment_ && segment_->others_waiting(slot_) &&
      turn_start_ - last_reclaim_ > std::chrono::seconds(1)) {
    last_reclaim_ = turn_start_;
    segment_->reclaim_dead();
  }
}

void StepGate::release() {
  std::lock_guard lock(mutex_);
  if (open_ || !holding_) return;
  holding_ = false;
  if (before_handover_) before_handover_();
  if (!client_.release()) open_gate_locked();
}

}  // namespace fleetscope::lanes
