#include "fleetscope/daemon/registry.h"

#include <algorithm>

namespace fleetscope::daemon {

AgentEntry Registry::add(const rpc::AgentHello& hello, const Caller& caller, int64_t now_ns) {
  if (caller.pid != 0 && hello.pid != caller.pid) {
    rpc::InvalidRequest error;
    error.message = "agent hello names pid " + std::to_string(hello.pid) +
                    " but the connection is pid " + std::to_string(caller.pid) +
                    ": an agent registers its own process only";
    error.__set_field("pid");
    throw error;
  }
  if (hello.workflow.empty()) {
    rpc::InvalidRequest error;
    error.message = "agent hello has an empty workflow";
    error.__set_field("workflow");
    throw error;
  }
  auto slot = std::make_shared<Slot>();
  AgentEntry& entry = slot->entry;
  entry.pid = hello.pid;
  entry.uid = caller.uid;
  entry.parent_chain = hello.parent_chain;
  entry.devices = hello.devices;
  entry.workflow = hello.workflow;
  entry.workflow_source = hello.workflow_source;
  entry.command = hello.__isset.command ? hello.command : std::string();
  entry.labels = hello.labels;
  entry.registered_ns = now_ns;
  std::lock_guard lock(mutex_);
  // A process registers once; a re-registration (agent reconnect) replaces its old entry.
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->second->entry.pid == hello.pid) {
      it->second->removed = true;
      it->second->wake.notify_all();
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
  entry.id = next_id_++;
  slots_[entry.id] = slot;
  return entry;
}

void Registry::remove(int64_t agent_id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  if (it == slots_.end()) return;
  it->second->removed = true;
  it->second->wake.notify_all();
  slots_.erase(it);
}

std::optional<AgentEntry> Registry::get(int64_t agent_id) const {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  if (it == slots_.end()) return std::nullopt;
  return it->second->entry;
}

std::vector<AgentEntry> Registry::all() const {
  std::lock_guard lock(mutex_);
  std::vector<AgentEntry> out;
  for (const auto& [id, slot] : slots_) out.push_back(slot->entry);
  return out;
}

size_t Registry::size() const {
  std::lock_guard lock(mutex_);
  return slots_.size();
}

std::vector<AgentEntry> Registry::in_tree_of(int pid) const {
  std::lock_guard lock(mutex_);
  std::vector<AgentEntry> out;
  for (const auto& [id, slot] : slots_) {
    const auto& e = slot->entry;
    if (e.pid == pid ||
        std::find(e.parent_chain.begin(), e.parent_chain.end(), pid) != e.parent_chain.end())
      out.push_back(e);
  }
  return out;
}

std::vector<AgentEntry> Registry::of_workflow(const std::string& workflow) const {
  std::lock_guard lock(mutex_);
  std::vector<AgentEntry> out;
  for (const auto& [id, slot] : slots_)
    if (slot->entry.workflow == workflow) out.push_back(slot->entry);
  return out;
}

std::optional<std::string> Registry::workflow_of_pid(int pid) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, slot] : slots_)
    if (slot->entry.pid == pid) return slot->entry.workflow;
  // A GPU process without an agent of its own (e.g. a worker that did not load it) belongs to
  // the workflow of a registered process in whose parent chain it appears, or that appears in
  // its own chain: NVML shows the pid; the tree tells the job.
  for (const auto& [id, slot] : slots_) {
    const auto& chain = slot->entry.parent_chain;
    if (std::find(chain.begin(), chain.end(), pid) != chain.end()) return slot->entry.workflow;
  }
  return std::nullopt;
}

void Registry::set_open_capture(int64_t agent_id, std::optional<int64_t> capture_id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  if (it != slots_.end()) it->second->entry.open_capture = capture_id;
}

void Registry::set_labels(int64_t agent_id, std::vector<std::string> labels) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  if (it != slots_.end()) it->second->entry.labels = std::move(labels);
}

bool Registry::post(int64_t agent_id, const rpc::AgentOrder& order) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  if (it == slots_.end()) return false;
  it->second->mailbox.push_back(order);
  it->second->wake.notify_all();
  return true;
}

rpc::AgentOrder Registry::await(int64_t agent_id, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  rpc::AgentOrder order;
  order.kind = rpc::AgentOrderKind::NOTHING;
  auto it = slots_.find(agent_id);
  if (it == slots_.end()) return order;
  std::shared_ptr<Slot> slot = it->second;  // stays alive while we wait even if removed
  ++slot->waiting;
  slot->wake.wait_for(lock, timeout,
                      [&] { return closed_ || slot->removed || !slot->mailbox.empty(); });
  --slot->waiting;
  if (!closed_ && !slot->removed && !slot->mailbox.empty()) {
    order = slot->mailbox.front();
    slot->mailbox.pop_front();
  }
  return order;
}

}  // namespace fleetscope::daemon

namespace fleetscope::daemon {

bool Registry::polling(int64_t agent_id) const {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(agent_id);
  return it != slots_.end() && it->second->waiting > 0;
}

void Registry::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (auto& [id, slot] : slots_) slot->wake.notify_all();
}

}  // namespace fleetscope::daemon
