#include "signal_chain.h"

#include <errno.h>
#include <signal.h>

#include <atomic>

namespace fleetscope::agent {
namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGABRT};

std::atomic<SignalHook> g_hook{nullptr};
// What was installed before us, per signal; written only while our handler is not installed for
// that signal, so the handler never sees a half-written entry.
struct sigaction g_previous[NSIG];

void hand_on(int signal_number, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[signal_number];
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler == SIG_DFL) {
    // The default action: restore it and re-raise. The signal stays blocked until this handler
    // returns, then ends the process exactly as it would have without the agent.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(signal_number, &default_action, nullptr);
    raise(signal_number);
    return;
  }
  previous.sa_handler(signal_number);
}

void on_signal(int signal_number, siginfo_t* info, void* context) {
  int saved_errno = errno;
  if (SignalHook hook = g_hook.load()) hook(signal_number);
  hand_on(signal_number, info, context);
  errno = saved_errno;
}

}  // namespace

void install_signal_chain(SignalHook hook) {
  g_hook.store(hook);
  for (int signal_number : kSignals) {
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) != 0) continue;
    if (current.sa_flags & SA_SIGINFO && current.sa_sigaction == on_signal) continue;  // ours
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    g_previous[signal_number] = current;
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | (current.sa_flags & SA_ONSTACK);
    sigemptyset(&ours.sa_mask);
    sigaction(signal_number, &ours, nullptr);
  }
}

}  // namespace fleetscope::agent
