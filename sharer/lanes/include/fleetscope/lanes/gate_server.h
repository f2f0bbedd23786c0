#pragma once
// The arbiter's transport: a Unix stream socket speaking gate_protocol.h, one thread with poll().
// Security: the socket file is created with mode 0600 unless told otherwise; a HELLO must carry
// the pid that SO_PEERCRED reports for the connection (no job can queue in another's name), and
// the peer must run as the server's user or as root.

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "fleetscope/lanes/gate_arbiter.h"

namespace fleetscope::lanes {

class GateServer {
 public:
  GateServer(GateArbiter& arbiter, std::string socket_path, mode_t socket_mode = 0600);
  ~GateServer();
  GateServer(const GateServer&) = delete;
  GateServer& operator=(const GateServer&) = delete;

  // Who may join which lane, decided by the host instead of the same-uid rule (the daemon runs
  // as root and admits a job to a lane it granted to that job's uid). Set before start().
  using Admission =
      std::function<bool(const std::string& lane_id, pid_t pid, uid_t uid, std::string* reason)>;
  void set_admission(Admission admission) { admission_ = std::move(admission); }

  // Binds (replacing a stale socket file, never any other kind of file), listens, starts the
  // thread. False and `error` on failure.
  bool start(std::string* error);
  // Closes every connection (every job's gate opens) and removes the socket file.
  void stop();

  const std::string& socket_path() const { return socket_path_; }

 private:
  struct Connection {
    std::string buffer;
    uint64_t member_id = 0;  // 0 until HELLO
    pid_t peer_pid = 0;
    uid_t peer_uid = 0;
  };

  void run();
  void accept_connection();
  // False when the connection must be closed.
  bool handle_line(int fd, Connection& connection, const std::string& line);
  void send_go(const std::vector<uint64_t>& members);
  void close_connection(int fd);

  GateArbiter& arbiter_;
  std::string socket_path_;
  mode_t socket_mode_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::map<int, Connection> connections_;
  std::map<uint64_t, int> member_fds_;
  Admission admission_;
};

}  // namespace fleetscope::lanes
