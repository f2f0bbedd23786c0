#include "fleetscope/daemon/trace_control.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

namespace fleetscope::daemon {
namespace {

[[noreturn]] void invalid(const std::string& message, const std::string& field = {}) {
  rpc::InvalidRequest error;
  error.message = message;
  if (!field.empty()) error.__set_field(field);
  throw error;
}

[[noreturn]] void not_found(const std::string& message, const std::string& kind,
                            std::optional<int64_t> id = {}) {
  rpc::NotFound error;
  error.message = message;
  error.__set_kind(kind);
  if (id) error.__set_id(*id);
  throw error;
}

[[noreturn]] void denied(const std::string& message) {
  rpc::PermissionDenied error;
  error.message = message;
  throw error;
}

void check_window(const WindowSpec& window) {
  if (window.duration_ms.has_value() == window.iterations.has_value())
    invalid("give exactly one of duration_ms and iterations", "duration_ms");
  if (window.duration_ms && (*window.duration_ms <= 0 || *window.duration_ms > 3'600'000))
    invalid("duration_ms must be in 1..3600000, got " + std::to_string(*window.duration_ms),
            "duration_ms");
  if (window.iterations && (*window.iterations <= 0 || *window.iterations > 100000))
    invalid("iterations must be in 1..100000, got " + std::to_string(*window.iterations),
            "iterations");
}

// "2026-11-26T09:10:11.123Z" (UTC) of a CLOCK_REALTIME time in ns.
std::string utc_text(int64_t ns) {
  const time_t seconds = static_cast<time_t>(ns / 1'000'000'000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<int>((ns / 1'000'000) % 1000));
  return text;
}

}  // namespace

TraceControl::TraceControl(Registry& registry, HostStore& store, Clock clock, int64_t grace_ms)
    : registry_(registry),
      store_(store),
      clock_(std::move(clock)),
      grace_ns_(grace_ms * 1'000'000) {
  finalizer_ = std::thread([this] { finalizer_loop(); });
  committer_ = std::make_unique<GroupCommitter>(
      [this](uint64_t ticket) { store_.wait_committed(ticket); },
      [this](const TakenBatch& batch, const std::string& error) { on_committed(batch, error); });
}

TraceControl::~TraceControl() {
  stop();
}

void TraceControl::stop() {
  if (committer_) committer_->stop();  // what was taken is committed before the daemon stops
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (finalizer_.joinable()) finalizer_.join();
}

size_t TraceControl::recover_interrupted() {
  auto interrupted = store_.interrupted_captures();
  std::lock_guard lock(mutex_);
  for (const auto& c : interrupted) {
    Window& w = windows_[c.id];
    w.capture_id = c.id;
    w.uid = static_cast<uid_t>(c.uid.value_or(0));
    w.start_ns = c.start_ns;
    w.end_ns = c.last_row_ns;
    w.interrupted = true;
    w.notes.push_back("interrupted: fleetscoped stopped (signal/crash) at " +
                      utc_text(c.last_row_ns) +
                      " (its last committed row); closed there at restart " + utc_text(clock_()));
    w.finalizing = true;
    to_finalize_.push_back(c.id);
  }
  changed_.notify_all();
  return interrupted.size();
}

rpc::TraceStarted TraceControl::start_for_pid(int pid, const WindowSpec& window,
                                              const Caller& caller) {
  if (pid <= 0) invalid("pid must be positive, got " + std::to_string(pid), "pid");
  auto agents = registry_.in_tree_of(pid);
  if (agents.empty())
    not_found("no process with the fleetscope agent in the process tree of pid " +
                  std::to_string(pid) +
                  " (is the job running with the agent loaded, e.g. through `fleetscope run` or "
                  "CUDA_INJECTION64_PATH?)",
              "process", pid);
  return start(std::move(agents), "pid " + std::to_string(pid), window, caller);
}

rpc::TraceStarted TraceControl::start_for_workflow(const std::string& workflow,
                                                   const WindowSpec& window, const Caller& caller) {
  if (workflow.empty()) invalid("workflow must not be empty", "workflow");
  auto agents = registry_.of_workflow(workflow);
  if (agents.empty())
    not_found("no process with the fleetscope agent belongs to workflow '" + workflow + "'",
              "workflow");
  return start(std::move(agents), "workflow '" + workflow + "'", window, caller);
}

rpc::TraceStarted TraceControl::start(std::vector<AgentEntry> agents, const std::string& what,
                                      const WindowSpec& window, const Caller& caller) {
  check_window(window);
  for (const auto& agent : agents)
    if (!caller.may_access(agent.uid))
      denied(what + " includes pid " + std::to_string(agent.pid) + " of uid " +
             std::to_string(agent.uid) + "; uid " + std::to_string(caller.uid) +
             " may only trace its own processes");
  // Claim the agents (under the lock, no I/O), then write the catalog rows and pause DCGM with no
  // lock held (batches, progress and status go on meanwhile), then publish the window and send
  // the orders under the lock again.
  WindowHook opening;
  {
    std::lock_guard lock(mutex_);
    for (const auto& agent : agents) {
      auto current = registry_.get(agent.id);
      if (opening_.count(agent.id) || (current && current->open_capture))
        invalid("a trace window is already open in pid " + std::to_string(agent.pid) +
                (current && current->open_capture
                     ? " (capture " + std::to_string(*current->open_capture) + ")"
                     : std::string(" (opening)")) +
                "; wait for it to finish (fleetscope status)");
    }
    for (const auto& agent : agents) opening_.insert(agent.id);
    opening = window_opening_;
  }
  struct Unclaim {
    TraceControl& self;
    const std::vector<AgentEntry>& agents;
    ~Unclaim() {
      std::lock_guard lock(self.mutex_);
      for (const auto& agent : agents) self.opening_.erase(agent.id);
    }
  } unclaim{*this, agents};
  const int64_t now = clock_();
  const int64_t workflow_id = store_.workflow_id(agents.front().workflow, std::nullopt);
  std::string source_path = agents.front().command.empty() ? what : agents.front().command;
  const int64_t capture_id = store_.open_capture(source_path, now);
  store_.set_capture_owner(capture_id, agents.front().uid, workflow_id);
  for (const auto& agent : agents)
    store_.upsert_process(capture_id, agent.pid, store_.workflow_id(agent.workflow, std::nullopt),
                          agent.command, agent.registered_ns);
  if (opening) {
    std::set<int> gpus;
    bool every_gpu = false;
    for (const auto& agent : agents) {
      every_gpu = every_gpu || agent.devices.empty();  // CUDA_VISIBLE_DEVICES unset: any GPU
      gpus.insert(agent.devices.begin(), agent.devices.end());
    }
    opening(capture_id,
            every_gpu ? std::vector<int>{} : std::vector<int>(gpus.begin(), gpus.end()));
  }
  rpc::AgentOrder order;
  order.kind = rpc::AgentOrderKind::OPEN_WINDOW;
  order.__set_capture_id(capture_id);
  if (window.duration_ms) order.__set_duration_ms(*window.duration_ms);
  if (window.iterations) order.__set_iterations(*window.iterations);
  rpc::TraceStarted started;
  started.capture_id = capture_id;
  started.start_ns = now;
  {
    std::lock_guard lock(mutex_);
    Window& w = windows_[capture_id];
    w.capture_id = capture_id;
    w.uid = agents.front().uid;
    w.workflow_id = workflow_id;
    w.start_ns = now;
    if (window.duration_ms) w.deadline_ns = now + int64_t{*window.duration_ms} * 1'000'000;
    for (const auto& agent : agents) {
      registry_.set_open_capture(agent.id, capture_id);
      if (!registry_.post(agent.id, order)) continue;  // vanished in between
      w.agents[agent.id] = agent.pid;
      w.pending.insert(agent.id);
      w.next_sequence[agent.id] = 0;
      started.pids.push_back(agent.pid);
    }
    if (w.pending.empty()) {
      w.notes.push_back("every agent left before the window opened");
      w.finalizing = true;
      to_finalize_.push_back(capture_id);
      closed_pending_.push_back(capture_id);
      changed_.notify_all();
    }
  }
  run_closed_hooks();
  return started;
}

int64_t TraceControl::on_batch(int64_t agent_id, rpc::RecordBatch&& batch, const Caller& caller) {
  auto agent = registry_.get(agent_id);
  if (!agent || (caller.pid != 0 && agent->pid != caller.pid) || agent->uid != caller.uid)
    invalid("agent " + std::to_string(agent_id) + " is not registered for this connection",
            "agent_id");
  const int64_t capture_id = batch.capture_id, sequence = batch.sequence;
  {
    std::unique_lock lock(mutex_);
    auto it = windows_.find(capture_id);
    if (it == windows_.end() || !it->second.pending.count(agent_id))
      invalid("capture " + std::to_string(capture_id) + " is not open in pid " +
                  std::to_string(agent->pid),
              "capture_id");
    // The reference outlives the wait below: a window is pruned only a minute after it is done
    // (prune_finished_locked), and it is not done while this agent has batches uncommitted.
    Window& w = it->second;
    int64_t& expected = w.next_sequence[agent_id];
    if (sequence != expected)
      invalid("batch sequence " + std::to_string(sequence) + " out of order (expected " +
                  std::to_string(expected) + ")",
              "sequence");
    ++expected;
    // The bounded window: wait while this agent already has the most batches uncommitted.
    changed_.wait(
        lock, [&] { return stopping_ || w.uncommitted[agent_id] < kUncommittedBatchesPerAgent; });
    ++w.uncommitted[agent_id];
  }
  // Rows go to the writer outside the lock (other agents' batches and status calls go on), as one
  // transaction; the committer reports it durable while this connection decodes the agent's next
  // batch.
  HostStore::QueuedBatch queued;
  try {
    queued = store_.add_batch(std::move(batch), capture_id);
  } catch (...) {
    std::lock_guard lock(mutex_);
    --windows_.at(capture_id).uncommitted[agent_id];
    changed_.notify_all();
    throw;
  }
  committer_->submit({capture_id, agent_id, sequence, queued.rows, queued.ticket});
  std::lock_guard lock(mutex_);
  auto it = windows_.find(capture_id);
  return it == windows_.end() ? -1 : it->second.committed[agent_id].value();
}

void TraceControl::on_committed(const TakenBatch& batch, const std::string& error) {
  std::lock_guard lock(mutex_);
  Window& w = windows_[batch.capture_id];
  --w.uncommitted[batch.agent_id];
  w.committed[batch.agent_id].on_result(batch.sequence, error.empty());
  if (error.empty()) {
    w.records += static_cast<int64_t>(batch.rows);
  } else {
    w.notes.push_back("batch " + std::to_string(batch.sequence) + " of pid " +
                      std::to_string(w.agents[batch.agent_id]) +
                      " could not be committed: " + error);
  }
  changed_.notify_all();
}

int TraceControl::uncommitted_of(const Window& w) {
  int total = 0;
  for (const auto& [agent, count] : w.uncommitted) total += count;
  return total;
}

void TraceControl::on_closed(int64_t agent_id, const rpc::WindowClosed& closed,
                             const Caller& caller) {
  auto agent = registry_.get(agent_id);
  if (!agent || (caller.pid != 0 && agent->pid != caller.pid) || agent->uid != caller.uid)
    invalid("agent " + std::to_string(agent_id) + " is not registered for this connection",
            "agent_id");
  std::unique_lock lock(mutex_);
  auto it = windows_.find(closed.capture_id);
  if (it == windows_.end() || !it->second.pending.count(agent_id))
    invalid("capture " + std::to_string(closed.capture_id) + " is not open in pid " +
                std::to_string(agent->pid),
            "capture_id");
  Window& w = it->second;
  // The answer tells the agent its whole window is durable.
  changed_.wait(lock, [&] { return stopping_ || w.uncommitted[agent_id] == 0; });
  if (!w.pending.count(agent_id)) return;  // the deadline closed it meanwhile
  struct HooksAfterUnlock {
    TraceControl& self;
    std::unique_lock<std::mutex>& lock;
    ~HooksAfterUnlock() {
      lock.unlock();
      self.run_closed_hooks();
    }
  } hooks{*this, lock};
  w.dropped += closed.dropped_records;
  w.overhead_ns += closed.collector_overhead_ns;
  if (closed.__isset.error) {
    w.notes.push_back("pid " + std::to_string(agent->pid) + ": " + closed.error);
    if (w.next_sequence[agent_id] == 0)  // it sent nothing: it refused the window
      w.refusals.push_back("pid " + std::to_string(agent->pid) + ": " + closed.error);
  }
  agent_finished(w, agent_id);
}

void TraceControl::on_agent_gone(int64_t agent_id) {
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, w] : windows_) {
      if (!w.pending.count(agent_id)) continue;
      w.notes.push_back("pid " + std::to_string(w.agents[agent_id]) +
                        " went away mid-window; the batches it sent before are kept");
      agent_finished(w, agent_id);
    }
  }
  run_closed_hooks();
}

void TraceControl::run_closed_hooks() {
  std::vector<int64_t> closed;
  WindowHook hook;
  {
    std::lock_guard lock(mutex_);
    closed.swap(closed_pending_);
    hook = window_closed_;
  }
  if (hook)
    for (int64_t id : closed) hook(id, {});
}

void TraceControl::agent_finished(Window& w, int64_t agent_id) {
  w.pending.erase(agent_id);
  registry_.set_open_capture(agent_id, std::nullopt);
  if (w.pending.empty() && !w.finalizing) {
    w.finalizing = true;
    to_finalize_.push_back(w.capture_id);
    closed_pending_.push_back(w.capture_id);  // its hook runs once the caller unlocked
  }
  changed_.notify_all();
}

void TraceControl::set_window_hooks(WindowHook opening, WindowHook closed) {
  std::lock_guard lock(mutex_);
  window_opening_ = std::move(opening);
  window_closed_ = std::move(closed);
}

void TraceControl::prune_finished_locked(int64_t now) {
  std::vector<std::pair<int64_t, int64_t>> finished;  // (done_ns, id)
  for (const auto& [id, w] : windows_)
    if (w.done) finished.emplace_back(w.done_ns, id);
  std::sort(finished.begin(), finished.end());
  size_t left = finished.size();
  for (const auto& [done_ns, id] : finished) {
    // Never one finished in the last minute: a progress() call (at most 60 s) may be waking up
    // on it.
    if (now - done_ns < int64_t{60} * 1'000'000'000) break;
    if (left <= kFinishedWindowsKept && now - done_ns < kFinishedWindowKeepNs) break;
    windows_.erase(id);
    --left;
  }
}

void TraceControl::expire() {
  expire_windows();
  run_closed_hooks();
}

void TraceControl::expire_windows() {
  std::lock_guard lock(mutex_);
  const int64_t now = clock_();
  prune_finished_locked(now);
  for (auto& [id, w] : windows_) {
    if (w.finalizing || !w.deadline_ns) continue;
    if (!w.close_sent && now >= *w.deadline_ns) {
      rpc::AgentOrder order;
      order.kind = rpc::AgentOrderKind::CLOSE_WINDOW;
      order.__set_capture_id(id);
      for (int64_t agent : w.pending) registry_.post(agent, order);
      w.close_sent = true;
    }
    if (now >= *w.deadline_ns + grace_ns_) {
      for (int64_t agent : std::set<int64_t>(w.pending)) {
        w.notes.push_back("pid " + std::to_string(w.agents[agent]) +
                          " did not close its window in time");
        agent_finished(w, agent);
      }
    }
  }
}

void TraceControl::finalizer_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !to_finalize_.empty(); });
    if (stopping_) return;
    int64_t id = to_finalize_.front();
    to_finalize_.pop_front();
    // Batches taken before the window ended are committed and counted before it is closed.
    changed_.wait(lock, [&] { return stopping_ || uncommitted_of(windows_[id]) == 0; });
    if (stopping_) return;
    Window snapshot = windows_[id];
    lock.unlock();
    std::optional<std::string> note;
    if (!snapshot.notes.empty()) {
      std::string joined;
      for (const auto& n : snapshot.notes) joined += (joined.empty() ? "" : "; ") + n;
      note = joined;
    }
    CaptureSummary summary;
    try {
      store_.close_capture(id, snapshot.end_ns.value_or(clock_()), snapshot.dropped,
                           snapshot.overhead_ns, note);
      summary = store_.analyze(id);
    } catch (const std::exception& e) {
      snapshot.notes.push_back(std::string("analysis failed: ") + e.what());
    }
    lock.lock();
    Window& w = windows_[id];
    w.summary = summary;
    w.notes = snapshot.notes;
    w.done = true;
    w.done_ns = clock_();
    changed_.notify_all();
  }
}

rpc::TraceProgress TraceControl::progress_of(const Window& w) const {
  rpc::TraceProgress p;
  p.capture_id = w.capture_id;
  p.done = w.done;
  for (const auto& [agent, pid] : w.agents) p.pids.push_back(pid);
  p.records = w.records;
  p.dropped_records = w.dropped;
  p.database_path = store_.path();
  if (!w.notes.empty()) {
    std::string joined;
    for (const auto& n : w.notes) joined += (joined.empty() ? "" : "; ") + n;
    p.__set_note(joined);
  }
  // Every agent refused (CUPTI busy, a window already open, ...): nothing was traced.
  if (w.done && w.records == 0 && !w.agents.empty() && w.refusals.size() == w.agents.size()) {
    std::string joined;
    for (const auto& r : w.refusals) joined += (joined.empty() ? "" : "; ") + r;
    p.__set_refused(joined);
  }
  if (w.done) {
    p.__set_kernels(w.summary.kernels);
    if (w.summary.gpu_busy_pct) p.__set_gpu_busy_pct(*w.summary.gpu_busy_pct);
    if (w.summary.top_finding) p.__set_top_finding(*w.summary.top_finding);
  }
  return p;
}

rpc::TraceProgress TraceControl::progress(int64_t capture_id, int32_t timeout_ms,
                                          const Caller& caller) {
  std::unique_lock lock(mutex_);
  auto it = windows_.find(capture_id);
  if (it == windows_.end()) {
    lock.unlock();
    return finished_progress(capture_id, caller);
  }
  if (!caller.may_access(it->second.uid))
    denied("capture " + std::to_string(capture_id) + " traced processes of another user");
  // Finished windows are pruned only by expire() after kFinishedWindowKeepNs: the entry outlives
  // this wait (at most 60 s).
  changed_.wait_for(lock, std::chrono::milliseconds(std::max(0, timeout_ms)),
                    [&] { return stopping_ || it->second.done; });
  return progress_of(it->second);
}

rpc::TraceProgress TraceControl::finished_progress(int64_t capture_id, const Caller& caller) {
  auto capture = store_.capture(capture_id);
  if (!capture || capture->source != "fleetscope-agent" || !capture->__isset.end_ns)
    not_found("capture " + std::to_string(capture_id) +
                  " is not a trace window of this daemon (open or finished)",
              "trace", capture_id);
  auto owner = store_.capture_owner(capture_id);
  if (!caller.is_root() && (!owner || !caller.may_access(static_cast<uid_t>(*owner))))
    denied("capture " + std::to_string(capture_id) + " traced processes of another user");
  rpc::TraceProgress p;
  p.capture_id = capture_id;
  p.done = true;
  p.records = 0;  // not kept once the window is pruned; the database has the rows
  p.dropped_records = capture->dropped_records;
  p.database_path = store_.path();
  if (capture->__isset.note) p.__set_note(capture->note);
  return p;
}

std::vector<rpc::OpenWindow> TraceControl::open_windows(const Caller& caller) const {
  std::lock_guard lock(mutex_);
  std::vector<rpc::OpenWindow> out;
  for (const auto& [id, w] : windows_) {
    if (w.done || w.interrupted || !caller.may_access(w.uid)) continue;
    rpc::OpenWindow o;
    o.capture_id = id;
    for (const auto& [agent, pid] : w.agents) o.pids.push_back(pid);
    o.start_ns = w.start_ns;
    if (w.deadline_ns) o.__set_deadline_ns(*w.deadline_ns);
    out.push_back(o);
  }
  return out;
}

bool TraceControl::any_open() const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, w] : windows_)
    if (!w.done && !w.interrupted) return true;
  return false;
}

}  // namespace fleetscope::daemon
