// The agents registered on this host: one entry per process that loaded the agent and connected
// to the daemon. The entry's pid and uid are the kernel's (SO_PEERCRED), not the agent's claim.
// Each agent has a mailbox of orders that its control connection long-polls (awaitOrder).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/daemon/peer.h"
#include "fleetscope_types.h"

namespace fleetscope::daemon {

struct AgentEntry {
  int64_t id = 0;
  int pid = 0;
  uid_t uid = 0;
  std::vector<int> parent_chain;
  std::vector<int> devices;
  std::string workflow;
  std::string workflow_source;
  std::string command;
  std::vector<std::string> labels;  // "key=value", validated (rpc_handler.h validated_hello)
  int64_t registered_ns = 0;
  std::optional<int64_t> open_capture;  // window currently open in this process
};

class Registry {
 public:
  // Registers an agent for `caller` (whose pid must equal hello.pid: an agent registers itself).
  // Throws rpc::InvalidRequest when it does not.
  AgentEntry add(const rpc::AgentHello& hello, const Caller& caller, int64_t now_ns);
  void remove(int64_t agent_id);  // wakes a pending poll, which then returns NOTHING
  std::optional<AgentEntry> get(int64_t agent_id) const;
  std::vector<AgentEntry> all() const;
  size_t size() const;

  // Agents in the process tree of `pid`: the process itself and every registered descendant
  // (pid in its parent chain).
  std::vector<AgentEntry> in_tree_of(int pid) const;
  std::vector<AgentEntry> of_workflow(const std::string& workflow) const;
  // The workflow of a process the device sampler saw: its own agent's, else that of the nearest
  // registered ancestor... or of a registered agent whose parent chain holds it.
  std::optional<std::string> workflow_of_pid(int pid) const;

  void set_open_capture(int64_t agent_id, std::optional<int64_t> capture_id);
  // Replaces the agent's scheduler labels (the kubelet's pod names found after it registered).
  void set_labels(int64_t agent_id, std::vector<std::string> labels);
  // Queues an order for the agent; false when the agent is gone.
  bool post(int64_t agent_id, const rpc::AgentOrder& order);
  // Waits up to `timeout` for an order; NOTHING on timeout or when the agent is removed.
  rpc::AgentOrder await(int64_t agent_id, std::chrono::milliseconds timeout);
  // Whether the agent's control connection is in await() now (its long poll is pending).
  bool polling(int64_t agent_id) const;
  // Shutdown: every pending and later await returns NOTHING at once.
  void close();

 private:
  struct Slot {
    AgentEntry entry;
    std::deque<rpc::AgentOrder> mailbox;
    std::condition_variable wake;
    bool removed = false;
    int waiting = 0;  // await() calls in progress
  };
  mutable std::mutex mutex_;
  std::map<int64_t, std::shared_ptr<Slot>> slots_;
  int64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace fleetscope::daemon
