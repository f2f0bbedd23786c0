// Process-wide facts every part of the injection library checks before touching its state.
#pragma once

#include <atomic>

namespace fleetscope::agent {

// A child forked without exec inherits the agent's state but none of its threads (control,
// writer, CUPTI's): it must not touch that state, or it would wait forever on threads that do
// not exist (or write into the parent's file). Set by the pthread_atfork child handler.
inline std::atomic<bool> g_forked_child{false};

}  // namespace fleetscope::agent
