// On-demand trace windows of running jobs (like `dyno gputrace`): picks the agents of a process
// tree or a workflow, checks the caller may trace them, opens a capture in the host database,
// orders each agent to open its window, takes their record batches, and finalizes the capture
// (end time, drops, overhead, analyzer findings) once every agent closed its window, vanished,
// or overran the deadline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/daemon/group_committer.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/peer.h"
#include "fleetscope/daemon/registry.h"
#include "fleetscope_types.h"

namespace fleetscope::daemon {

// How many of one agent's batches may be taken but not yet committed; the next pushRecords waits
// beyond this (the bounded window: memory stays at a few batches per agent, and a daemon killed
// mid-stream loses at most these, which the agent was never told were committed).
inline constexpr int kUncommittedBatchesPerAgent = 4;

struct WindowSpec {
  std::optional<int32_t> duration_ms;
  std::optional<int32_t> iterations;
};

class TraceControl {
 public:
  using Clock = std::function<int64_t()>;  // ns, CLOCK_REALTIME base
  // grace_ms: how long after the deadline a window may stay open before the daemon closes it
  // without the agents that did not answer.
  TraceControl(Registry& registry, HostStore& store, Clock clock, int64_t grace_ms = 5000);
  ~TraceControl();  // stop()
  void stop();      // finalizes nothing more; joins the finalizer

  rpc::TraceStarted start_for_pid(int pid, const WindowSpec& window, const Caller& caller);
  rpc::TraceStarted start_for_workflow(const std::string& workflow, const WindowSpec& window,
                                       const Caller& caller);

  // From the agent link (the caller is the agent's connection). on_batch takes the batch (its rows
  // go to the writer, the group committer commits them) and returns the agent's committed
  // sequence in that window (-1: none yet); on_closed returns once the agent's batches are
  // committed.
  int64_t on_batch(int64_t agent_id, rpc::RecordBatch&& batch, const Caller& caller);
  void on_closed(int64_t agent_id, const rpc::WindowClosed& closed, const Caller& caller);
  void on_agent_gone(int64_t agent_id);

  // At start: closes every window a previous run left open (killed or crashed mid-window) at its
  // last committed row, with the note "interrupted: fleetscoped stopped (signal/crash) ...", and
  // analyzes it, on the finalizer thread. Returns how many were found.
  size_t recover_interrupted();

  // Waits up to timeout_ms for the window to be finalized.
  rpc::TraceProgress progress(int64_t capture_id, int32_t timeout_ms, const Caller& caller);
  std::vector<rpc::OpenWindow> open_windows(const Caller& caller) const;
  bool any_open() const;
  // Sends CLOSE orders at deadlines and finalizes overdue windows; the daemon calls it each tick.
  void expire();

  // Called right before a window's OPEN orders go out, with the GPUs its processes may use
  // (empty: unknown, so all), and once every process of the window has closed it. The daemon
  // pauses DCGM's profiling fields on those GPUs in between (CUPTI and profiling counters exclude
  // each other). Both hooks run with no lock of this class held.
  using WindowHook = std::function<void(int64_t capture_id, const std::vector<int>& gpus)>;
  void set_window_hooks(WindowHook opening, WindowHook closed);

 private:
  struct Window {
    int64_t capture_id = 0;
    uid_t uid = 0;
    int64_t workflow_id = 0;
    std::map<int64_t, int> agents;  // agent id -> pid, every agent ordered to open
    std::set<int64_t> pending;      // agents that have not closed yet
    std::map<int64_t, int64_t> next_sequence;
    std::map<int64_t, int> uncommitted;            // agent -> batches taken, not yet committed
    std::map<int64_t, CommittedPrefix> committed;  // agent -> sequence acknowledged as committed
    int64_t start_ns = 0;
    std::optional<int64_t> deadline_ns;
    bool close_sent = false;
    int64_t records = 0, dropped = 0, overhead_ns = 0;
    std::vector<std::string> notes;
    std::vector<std::string> refusals;  // agents that closed with an error before any batch
    bool finalizing = false, done = false;
    int64_t done_ns = 0;            // when it was finalized (pruning)
    bool interrupted = false;       // left open by a previous run (recover_interrupted)
    std::optional<int64_t> end_ns;  // set: the end to record (else the finalizing time)
    CaptureSummary summary;
  };

  rpc::TraceStarted start(std::vector<AgentEntry> agents, const std::string& what,
                          const WindowSpec& window, const Caller& caller);
  void agent_finished(Window& window, int64_t agent_id);  // mutex_ held
  void finalizer_loop();
  void on_committed(const TakenBatch& batch, const std::string& error);
  static int uncommitted_of(const Window& window);
  rpc::TraceProgress progress_of(const Window& window) const;
  // A window pruned from memory: done, with what the database keeps (end, drops, note).
  rpc::TraceProgress finished_progress(int64_t capture_id, const Caller& caller);

  Registry& registry_;
  HostStore& store_;
  Clock clock_;
  int64_t grace_ns_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // By capture id. Finished windows stay for progress() a while (kFinishedWindowKeepNs, at most
  // kFinishedWindowsKept), then are pruned; progress() answers for older ones from the database.
  std::map<int64_t, Window> windows_;
  static constexpr int64_t kFinishedWindowKeepNs = int64_t{600} * 1'000'000'000;
  static constexpr size_t kFinishedWindowsKept = 256;
  void prune_finished_locked(int64_t now);
  std::deque<int64_t> to_finalize_;
  std::set<int64_t> opening_;  // agents whose window is being opened (start(), outside the lock)
  std::vector<int64_t> closed_pending_;  // windows whose closed hook has not run yet
  // Runs the closed hook of every window in closed_pending_, with no lock of this class held.
  void run_closed_hooks();
  void expire_windows();
  bool stopping_ = false;
  std::thread finalizer_;
  std::unique_ptr<GroupCommitter> committer_;
  WindowHook window_opening_, window_closed_;
};

}  // namespace fleetscope::daemon
