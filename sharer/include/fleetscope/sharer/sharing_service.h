#pragma once
// The sharing service's decisions, without sockets, files or clocks (the daemon hosts it: see
// daemon/include/fleetscope/daemon/sharing_host.h). One LaneAllocator per GPU hands out lanes to
// jobs that ask (`fleetscope run --share`); an applied plan (the JSON `fleetscope share plan`
// writes) places the jobs of the workflows it names into its planned lanes; in automatic mode the
// measured iteration time of every planned job (its step boundaries, as the iteration gate sees
// them) is compared with the plan's solo iteration time and a plan whose jobs slow down beyond
// the bound is withdrawn: its workflows run unshared from their next start. Every decision
// becomes a SharingRecord (a sharing_events row) and every lane change a LedgerChange (the
// shared-memory ledger the interposition library enforces). Not thread-safe: the host locks.

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fleetscope/sharer/lane_allocator.h"

namespace fleetscope::sharer {

struct ServiceGpu {
  int index = 0;
  std::string uuid;
  int64_t capacity_bytes = 0;
};

struct LaneAsk {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // with pid: the process identity that survives pid reuse
  uid_t uid = 0;
  std::string workflow;
  std::optional<int64_t> persistent_bytes;  // unset: the active plan's figure
  std::optional<int64_t> ephemeral_bytes;
  std::string gpu_hint;  // a GPU UUID or index; empty: any
  bool planned_only = false;
  int priority = 0;
};

enum class TicketState { kGranted, kQueued, kUnshared };

struct LaneTicket {
  TicketState state = TicketState::kUnshared;
  int64_t request_id = 0;
  int gpu_index = -1;
  std::string gpu_uuid;
  std::string lane_name;  // FLEETSCOPE_LANE_ID
  int64_t lane_bytes = 0;
  std::string policy;
  std::optional<int64_t> plan_id;
  std::string reason;
  pid_t pid = 0;
  uid_t uid = 0;
};

// One job of a plan: where its workflow's jobs go.
struct PlanPlacement {
  std::string job_id;
  std::string workflow;
  std::string gpu;  // the planner's GPU label
  int lane = -1;    // the planner's lane id on that GPU
  int64_t lane_capacity_bytes = 0;
  int64_t persistent_bytes = 0;
  int64_t ephemeral_peak_bytes = 0;
  int64_t solo_iteration_ns = 0;  // 0: not measured (the job's slowdown cannot be judged)
  double max_slowdown = 0;        // the plan's per-job bound (0: none)
};

// The placements of a `fleetscope share plan --format json` document (jobs the planner could not
// place are left out). Throws std::runtime_error naming `source` and what was expected.
std::vector<PlanPlacement> parse_plan_placements(const std::string& json_text,
                                                 const std::string& source);

struct ServicePlan {
  int64_t id = 0;  // its lane_plans row
  int64_t created_ns = 0;
  std::string policy = "fifo";  // turn policy of its lanes
  bool automatic = false;
  double max_slowdown = 0;  // 0: the placements' own bounds
  bool active = true;
  std::string withdrawn_reason;
  std::vector<PlanPlacement> placements;
  std::vector<std::string> workflows() const;
};

// A sharing_events row.
struct SharingRecord {
  int64_t ts_ns = 0;
  std::optional<int64_t> plan_id;
  std::string kind;
  std::string detail_json;
};

struct LedgerChange {
  enum class Kind { kCreate, kResize, kRemove };
  Kind kind = Kind::kCreate;
  std::string lane_name;
  int64_t capacity_bytes = 0;
  std::string policy;
};

struct ServiceJob {
  int64_t job_key = 0;  // the allocator's job id
  int64_t request_id = 0;
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  uid_t uid = 0;
  std::string workflow;
  int64_t persistent_bytes = 0, ephemeral_bytes = 0;
  int64_t granted_ns = 0;
  std::optional<int64_t> plan_id;
  int gpu_index = -1;
  std::string lane_name;
  int64_t solo_iteration_ns = 0;
  double max_slowdown = 0;
  // Step boundaries seen by the gate, for the measured iteration time.
  int64_t last_boundary_ns = 0;
  int64_t iterations = 0;
  std::deque<int64_t> recent_intervals_ns;  // the last kMeasuredIntervals
  std::optional<double> measured_slowdown() const;
};

struct ServiceLane {
  int gpu_index = -1;
  std::string gpu_uuid;
  std::string lane_name;
  int64_t offset_bytes = 0, capacity_bytes = 0;
  std::string policy;
  std::vector<ServiceJob> jobs;
};

class SharingService {
 public:
  // Whether a process (pid + start ticks) still runs; the host reads /proc.
  using Liveness = std::function<bool(pid_t pid, uint64_t start_ticks)>;
  // Iteration intervals kept per job, and how many a slowdown verdict needs.
  static constexpr size_t kMeasuredIntervals = 8;
  static constexpr size_t kMinIntervalsForVerdict = 3;

  // `lane_prefix` starts every lane name ([A-Za-z0-9._-], unique per daemon run so a stale ledger
  // from an earlier run is never reused).
  // `memory`: the host's memory model (memory_model.h: the margin and the CUDA context each job
  // holds outside its lane), the same one `share plan` plans with.
  SharingService(std::vector<ServiceGpu> gpus, std::string lane_prefix, Liveness alive,
                 MemoryModel memory = {});

  // A lane now, "queued" when no GPU has room, or "unshared" (sharing off; planned_only and no
  // plan names the workflow; a withdrawn plan named it). Throws std::invalid_argument for a
  // request without memory figures that no plan supplies, or for one no GPU could ever hold.
  LaneTicket request(const LaneAsk& ask, int64_t now_ns);
  // The state of a request now (granted, still queued, or answered unshared); nullopt if unknown.
  std::optional<LaneTicket> ticket(int64_t request_id) const;
  // Frees the lane of `pid` (or drops its queued request); false when it holds neither.
  bool release(pid_t pid, int64_t now_ns, const std::string& why);
  // Releases the lanes and queued requests of processes that are gone; returns how many.
  int reap(int64_t now_ns);

  // Makes `plan` the active plan (a plan active before is superseded) and enables sharing.
  // Returns the id of the plan it superseded, if any.
  std::optional<int64_t> apply_plan(ServicePlan plan, int64_t now_ns);
  // Sharing off: new requests run unshared, queued ones are answered unshared, existing lanes
  // stay until their jobs end, the active plan is no longer applied.
  void off(int64_t now_ns);
  // Sharing back on after off(): new requests get lanes again, and the plan that off() stopped
  // applies again (a "sharing_on" record naming it).
  void on(int64_t now_ns);
  void set_automatic(bool on, double max_slowdown, int64_t now_ns);
  // After a daemon restart (sharing_restore.h): takes back the state its records describe and,
  // with `plan`, makes it the active plan again (a "plan_restored" record). Before any request.
  void resume(bool enabled, bool automatic, double max_slowdown,
              const std::set<std::string>& withdrawn_workflows, std::optional<ServicePlan> plan,
              int64_t now_ns);
  bool enabled() const { return enabled_; }
  // Salus's own mode for jobs that accept time slicing: one lane per GPU, which every job the
  // service places there joins (planned jobs go where their plan says).
  void set_single_lane(bool on) { single_lane_ = on; }
  bool single_lane() const { return single_lane_; }
  bool automatic() const { return automatic_; }
  double max_slowdown() const { return max_slowdown_; }

  // A step boundary of a process in a lane (the gate saw it ask for the next turn).
  void record_boundary(pid_t pid, int64_t ts_ns);
  // `count` iterations of the job of `pid` that took `mean_interval_ns` each on average (the host
  // reads them from the lane ledgers' step counters: every job, whether its lane is shared or
  // runs beside others on the GPU). At most kMeasuredIntervals of them are kept.
  void record_iterations(pid_t pid, int64_t count, int64_t mean_interval_ns);
  // Automatic mode: withdraws the active plan when one of its jobs' measured slowdown exceeds
  // the bound. Returns true when it withdrew one.
  bool check_slowdowns(int64_t now_ns);

  std::vector<SharingRecord> take_records();
  std::vector<LedgerChange> take_ledger_changes();

  const std::vector<ServiceGpu>& gpus() const { return gpus_; }
  int64_t free_bytes(int gpu_index) const;
  std::vector<ServiceLane> lanes() const;
  std::vector<LaneTicket> queued() const;
  const std::vector<ServicePlan>& plans() const { return plans_; }
  const ServicePlan* active_plan() const;
  // The job whose lane request named `pid` (the host walks a gate member's ancestors with it).
  const ServiceJob* job_of(pid_t pid) const;

 private:
  struct Pending {
    LaneAsk ask;
    int64_t request_id = 0;
    int64_t queued_ns = 0;
  };
  struct GpuState {
    ServiceGpu gpu;
    LaneAllocator allocator;
    std::map<int, int64_t> ledger_bytes;  // allocator lane id -> capacity the ledger has
    std::map<int, std::string> lane_policy;
  };

  // Tries to place `ask`; the ticket is kGranted or kQueued.
  LaneTicket place(const LaneAsk& ask, int64_t request_id, int64_t now_ns);
  const PlanPlacement* placement_for(const std::string& workflow) const;
  std::optional<size_t> gpu_for_label(const std::string& label);
  std::string lane_name(const GpuState& gpu, int lane_id) const;
  void sync_ledgers(GpuState& gpu);
  void retry_queue(int64_t now_ns);
  void record(int64_t ts_ns, std::optional<int64_t> plan_id, const std::string& kind,
              const std::string& detail_json);
  void release_job(std::map<pid_t, ServiceJob>::iterator job, int64_t now_ns,
                   const std::string& why);

  std::vector<ServiceGpu> gpus_;
  std::vector<GpuState> states_;
  std::string lane_prefix_;
  Liveness alive_;
  MemoryModel memory_;
  bool single_lane_ = false;
  bool enabled_ = true;
  bool automatic_ = false;
  double max_slowdown_ = 0;
  std::vector<ServicePlan> plans_;
  std::optional<size_t> active_plan_;
  std::optional<size_t> switched_off_plan_;  // the plan off() stopped (on() applies it again)
  std::map<std::string, size_t> label_gpu_;  // the active plan's GPU labels -> GPU
  // (plan id, planner GPU label, planner lane) -> (GPU, allocator lane id)
  std::map<std::tuple<int64_t, std::string, int>, std::pair<size_t, int>> planned_lanes_;
  std::set<std::string> withdrawn_workflows_;
  std::map<pid_t, ServiceJob> jobs_;
  std::deque<Pending> queue_;
  std::map<int64_t, LaneTicket> answered_;  // request id -> last answer (kept for awaitLane)
  std::vector<SharingRecord> records_;
  std::vector<LedgerChange> ledger_changes_;
  int64_t next_request_id_ = 1;
  int64_t next_job_key_ = 1;
};

std::string_view ticket_state_name(TicketState state);

}  // namespace fleetscope::sharer
