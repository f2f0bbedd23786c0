// Real processes for the daemon tests: a child with its stdout on a pipe (to wait for the lines
// it prints), the daemon under test on sockets in a temporary directory, and API clients.
#pragma once

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TTransport.h>

#include "FleetscopeHost.h"
#include "fleetscope/rpc/transport.h"
#include "temp_dir.h"

namespace fleetscope::test_support {

class Child {
 public:
  // argv[0] is the program path; its stdout and stderr go to the pipe. `env` entries ("NAME=value")
  // are added to the environment.
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(pipe_fds[1], 1);
      dup2(pipe_fds[1], 2);
      for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(pipe_fds[1]);
    out_fd_ = pipe_fds[0];
  }
  ~Child() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exited_; }
  void signal(int sig) const { ::kill(pid_, sig); }

  // The next stdout line starting with `prefix` within `timeout`, or nullopt.
  std::optional<std::string> wait_line(const std::string& prefix,
                                       std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      size_t newline;
      while ((newline = buffer_.find('\n')) != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        if (line.rfind(prefix, 0) == 0) return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{out_fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      ssize_t n = read(out_fd_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Exit status (as waitpid reports it) within `timeout`, or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool exited_ = false;
  std::string buffer_;
};

struct ProgramResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a program to completion (at most `timeout`) and collects what it printed.
inline ProgramResult run_program(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  Child child(argv);
  ProgramResult result;
  while (auto line = child.wait_line("", timeout)) result.output += *line + "\n";
  if (auto status = child.wait_exit(timeout); status && WIFEXITED(*status))
    result.exit_code = WEXITSTATUS(*status);
  return result;
}

// Polls `done` (every few ms) until it holds or `timeout` passes: the tests wait on what they
// need to see, with a deadline, never on a fixed time.
template <class Condition>
bool eventually(Condition done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline bool socket_accepts(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

// An API client on the daemon's socket (what `fleetscope status` uses).
class ApiClient {
 public:
  explicit ApiClient(const std::string& address, int timeout_ms = 10'000) {
    transport_ = rpc::make_client_transport(address, rpc::TransportLimits{}, timeout_ms);
    client_ = std::make_unique<rpc::FleetscopeHostClient>(
        rpc::make_protocol(transport_, rpc::TransportLimits{}));
    transport_->open();
  }
  ~ApiClient() {
    try {
      transport_->close();
    } catch (...) {
    }
  }
  rpc::FleetscopeHostClient* operator->() { return client_.get(); }

 private:
  std::shared_ptr<apache::thrift::transport::TTransport> transport_;
  std::unique_ptr<rpc::FleetscopeHostClient> client_;
};

struct DaemonUnderTest {
  TempDir dir;
  std::string database = dir.file("host.db");
  std::string api_socket = dir.file("api.sock");
  std::string agent_socket = dir.file("agent.sock");
  std::unique_ptr<Child> process;
  // Runs before the daemon's own argv, e.g. {"/bin/sh", "-c", "ulimit -n 256 && exec \"$0\"
  // \"$@\""}.
  std::vector<std::string> launcher;

  void start(std::vector<std::string> extra = {}, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {
        FLEETSCOPED, "--database",       database,     "--socket",
        api_socket,  "--agent-socket",   agent_socket, "--prometheus-port",
        "-1",        "--nvml-library",   NVML_STANDIN, "--sample-interval-ms",
        "100",       "--trace-grace-ms", "2000"};
    // An option of `extra` replaces the default above (fleetscoped refuses a one-value option
    // given twice with different values).
    for (size_t i = 0; i < extra.size(); ++i) {
      auto given = std::find(argv.begin() + 1, argv.end(), extra[i]);
      if (i + 1 < extra.size() && extra[i].rfind("--", 0) == 0 && given != argv.end() &&
          given + 1 != argv.end()) {
        *(given + 1) = extra[++i];
      } else {
        argv.push_back(extra[i]);
      }
    }
    argv.insert(argv.begin(), launcher.begin(), launcher.end());
    // run_in_unit_sandbox.sh: every daemon under the unit's process limits.
    if (const char* sandbox = std::getenv("FLEETSCOPE_TEST_DAEMON_LAUNCHER"); sandbox && *sandbox)
      argv.insert(argv.begin(), sandbox);
    process = std::make_unique<Child>(argv, env);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(socket_accepts(api_socket) && socket_accepts(agent_socket))) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("fleetscoped did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // SIGTERM; returns the exit status.
  int stop() {
    process->signal(SIGTERM);
    auto status = process->wait_exit(std::chrono::seconds(15));
    process.reset();
    return status.value_or(-1);
  }
};

}  // namespace fleetscope::test_support
