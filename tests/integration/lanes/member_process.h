// Starts lane_member in a child process (fork + execve, the real LD_PRELOAD path) with pipes on
// its stdin and stdout, and reads its result lines with a timeout.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fleetscope/lanes/lane_segment.h"

namespace fleetscope::test_support {

// The grant token the tests' lanes carry (fleetscoped draws a random one per lane).
inline constexpr const char* kTestLaneToken = "0123456789abcdef0123456789abcdef";

// What fleetscoped does before a job starts in lane `lane`: the ledger in `directory` with the
// lane's size (0: no memory cap) and a grant token. Returns the variables that give the job the
// lane (FLEETSCOPE_LANE_ID, _DIR, _TOKEN); the library never makes a lane itself. An existing
// ledger is kept (a second job joins it).
inline std::map<std::string, std::string> granted_lane(const std::string& directory,
                                                       const std::string& lane,
                                                       uint64_t lane_bytes) {
  std::string error;
  auto ledger = lanes::LaneSegment::open_or_create(
      lanes::LaneSegment::path_for_lane(directory, lane),
      lane_bytes > 0 ? lane_bytes : lanes::LaneSegment::kUnlimited, &error, kTestLaneToken);
  if (!ledger) throw std::runtime_error("cannot grant lane " + lane + ": " + error);
  return {{"FLEETSCOPE_LANE_ID", lane},
          {"FLEETSCOPE_LANE_DIR", directory},
          {"FLEETSCOPE_LANE_TOKEN", kTestLaneToken}};
}

class MemberProcess {
 public:
  // `environment` is added to (and overrides) the test's own environment.
  MemberProcess(const std::string& program, const std::vector<std::string>& arguments,
                const std::map<std::string, std::string>& environment) {
    std::map<std::string, std::string> merged;
    for (char** entry = environ; *entry; ++entry) {
      std::string text = *entry;
      auto equals = text.find('=');
      if (equals != std::string::npos) merged[text.substr(0, equals)] = text.substr(equals + 1);
    }
    for (const auto& [name, value] : environment) merged[name] = value;
    // Under the asan preset the sanitizer runtime is not first in a preloaded process's list.
    merged["ASAN_OPTIONS"] = merged["ASAN_OPTIONS"] + (merged["ASAN_OPTIONS"].empty() ? "" : ":") +
                             "verify_asan_link_order=0:detect_leaks=0";
    std::vector<std::string> env_strings;
    for (const auto& [name, value] : merged) env_strings.push_back(name + "=" + value);
    std::vector<std::string> argv_strings{program};
    argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());

    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) return;
    std::vector<char*> argv, envp;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::execve(program.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }

  ~MemberProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
  }

  pid_t pid() const { return pid_; }

  // The next line of output, or "" after `timeout_ms` or at end of output.
  std::string read_line(int timeout_ms = 10000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      auto newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd fd{out_, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0) return "";
      char chunk[256];
      ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  void write_line(const std::string& line) {
    std::string text = line + "\n";
    (void)!::write(in_, text.data(), text.size());
  }

  // End of input: a pending `wait` command continues.
  void close_input() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

  void kill(int signal) { ::kill(pid_, signal); }

  // Exit status as waitpid reports it (-1 if it cannot be had).
  int wait() {
    if (reaped_) return status_;
    if (::waitpid(pid_, &status_, 0) != pid_) status_ = -1;
    reaped_ = true;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = -1;
};

}  // namespace fleetscope::test_support
