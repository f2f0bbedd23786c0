#include "fleetscope/lanes/gate_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "fleetscope/lanes/gate_protocol.h"

namespace fleetscope::lanes {

namespace {

void send_line(int fd, const std::string& line) {
  // Replies are a few bytes; a peer that stopped reading only loses its own GO.
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

GateServer::GateServer(GateArbiter& arbiter, std::string socket_path, mode_t socket_mode)
    : arbiter_(arbiter), socket_path_(std::move(socket_path)), socket_mode_(socket_mode) {}

GateServer::~GateServer() {
  stop();
}

bool GateServer::start(std::string* error) {
  sockaddr_un address{};
  if (socket_path_.empty() || socket_path_.size() >= sizeof(address.sun_path)) {
    *error = "gate socket path '" + socket_path_ + "': expected 1.." +
             std::to_string(sizeof(address.sun_path) - 1) + " characters";
    return false;
  }
  struct stat existing {};
  if (::lstat(socket_path_.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      *error = socket_path_ + ": exists and is not a socket; not replacing it";
      return false;
    }
    ::unlink(socket_path_.c_str());
  }
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  // The socket file gets its final mode before anyone can connect.
  mode_t old_mask = ::umask(static_cast<mode_t>(~socket_mode_ & 0777));
  int bound = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  ::umask(old_mask);
  if (bound != 0 || ::listen(listen_fd_, 64) != 0) {
    *error = socket_path_ + ": " + std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = std::string("pipe2: ") + std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  running_ = true;
  thread_ = std::thread([this] { run(); });
  return true;
}

void GateServer::stop() {
  if (!running_.exchange(false)) return;
  char byte = 1;
  (void)::write(wake_pipe_[1], &byte, 1);
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, connection] : connections_) ::close(fd);
  connections_.clear();
  member_fds_.clear();
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
  listen_fd_ = wake_pipe_[0] = wake_pipe_[1] = -1;
  ::unlink(socket_path_.c_str());
}

void GateServer::run() {
  std::vector<pollfd> fds;
  while (running_) {
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& [fd, connection] : connections_) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) accept_connection();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      auto found = connections_.find(fd);
      if (found == connections_.end()) continue;
      char chunk[512];
      ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        close_connection(fd);
        continue;
      }
      Connection& connection = found->second;
      connection.buffer.append(chunk, static_cast<size_t>(n));
      bool keep = true;
      size_t newline;
      while (keep && (newline = connection.buffer.find('\n')) != std::string::npos) {
        std::string line = connection.buffer.substr(0, newline);
        connection.buffer.erase(0, newline + 1);
        keep = handle_line(fd, connection, line);
      }
      if (keep && connection.buffer.size() > kMaxGateLine) keep = false;
      if (!keep) close_connection(fd);
    }
  }
}

void GateServer::accept_connection() {
  int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  Connection connection;
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    ::close(fd);
    return;
  }
  connection.peer_pid = credentials.pid;
  connection.peer_uid = credentials.uid;
  connections_.emplace(fd, std::move(connection));
}

bool GateServer::handle_line(int fd, Connection& connection, const std::string& line) {
  std::string error;
  if (connection.member_id == 0) {
    auto hello = parse_hello(line, &error);
    if (hello && hello->pid != connection.peer_pid) {
      error = "pid " + std::to_string(hello->pid) + " is not the connecting process (" +
              std::to_string(connection.peer_pid) + ")";
      hello.reset();
    }
    if (hello && admission_) {
      if (!admission_(hello->lane_id, hello->pid, connection.peer_uid, &error)) hello.reset();
    } else if (hello && connection.peer_uid != ::geteuid() && connection.peer_uid != 0) {
      error = "uid " + std::to_string(connection.peer_uid) + " may not join this arbiter's lanes";
      hello.reset();
    }
    if (!hello) {
      send_line(fd, "REFUSED " + error + "\n");
      return false;
    }
    connection.member_id = arbiter_.join(hello->lane_id, hello->pid, hello->priority);
    member_fds_[connection.member_id] = fd;
    send_line(fd, "WELCOME\n");
    return true;
  }
  auto request = parse_request(line, &error);
  if (!request) return false;
  if (request->kind == GateRequestKind::kNext) {
    send_go(arbiter_.request_turn(connection.member_id, request->remaining_ns));
  } else {
    send_go(arbiter_.release(connection.member_id));
  }
  return true;
}

void GateServer::send_go(const std::vector<uint64_t>& members) {
  for (uint64_t member : members) {
    auto fd = member_fds_.find(member);
    if (fd != member_fds_.end()) send_line(fd->second, "GO\n");
  }
}

void GateServer::close_connection(int fd) {
  auto found = connections_.find(fd);
  if (found == connections_.end()) return;
  uint64_t member = found->second.member_id;
  connections_.erase(found);
  ::close(fd);
  if (member != 0) {
    member_fds_.erase(member);
    send_go(arbiter_.leave(member));
  }
}

}  // namespace fleetscope::lanes
