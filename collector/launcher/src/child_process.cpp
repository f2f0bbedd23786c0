#include "fleetscope/launcher/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fleetscope::launcher {
namespace {

volatile sig_atomic_t g_child = 0;

// A launcher told to stop passes the request on, so the traced job can exit (and the agent write
// its data) instead of being orphaned.
void forward_signal(int signal) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), signal);
}

}  // namespace

int run_child(const std::vector<std::string>& argv,
              const std::vector<std::pair<std::string, std::string>>& environment,
              std::string& error) {
  if (argv.empty()) {
    error = "no command";
    return 127;
  }
  std::vector<char*> c_argv;
  for (const std::string& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return 1;
  }
  if (pid == 0) {
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    execvp(c_argv[0], c_argv.data());
    int code = errno == ENOENT ? 127 : 126;
    std::fprintf(stderr, "fleetscope run: cannot run '%s': %s\n", c_argv[0], std::strerror(errno));
    _exit(code);
  }
  g_child = pid;
  // Like system(3): the terminal's SIGINT/SIGQUIT reach the child directly (same process group);
  // the launcher waits for it to finish instead of dying first.
  struct sigaction ignore {
  }, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  g_child = 0;
  if (waited < 0) {
    error = std::string("waitpid: ") + std::strerror(errno);
    return 1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace fleetscope::launcher
