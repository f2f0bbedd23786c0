#include "fleetscope/daemon/sharing_host.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "fleetscope/lanes/process_identity.h"
#include "fleetscope/lanes/turn_policy.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/sharing_restore.h"

namespace fleetscope::daemon {

namespace {

using json = nlohmann::json;

// How far up the process tree a gate member's lane holder is looked for: `fleetscope run
// --share` -> a shell or a launcher (torchrun) -> the worker.
constexpr int kAncestorDepth = 8;

}  // namespace

std::vector<pid_t> ancestors_of(pid_t pid, int depth, const std::string& proc_root) {
  std::vector<pid_t> out;
  for (int i = 0; i < depth && pid > 1; ++i) {
    std::ifstream stat(proc_root + "/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // proc(5): "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
    const auto close = text.rfind(')');
    if (close == std::string::npos) break;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    pid_t parent = 0;
    if (!(rest >> state >> parent) || parent <= 0) break;
    out.push_back(parent);
    pid = parent;
  }
  return out;
}

std::optional<uid_t> uid_of_process(pid_t pid, const std::string& proc_root) {
  std::ifstream status(proc_root + "/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream fields(line.substr(4));
      long real = -1;
      if (fields >> real && real >= 0) return static_cast<uid_t>(real);
    }
  }
  return std::nullopt;
}

SharingHost::SharingHost(HostStore& store, GpuSource gpus, Clock clock, std::ostream& log,
                         sharer::MemoryModel memory, bool single_lane)
    : store_(store),
      gpu_source_(std::move(gpus)),
      clock_(std::move(clock)),
      log_(log),
      memory_(memory),
      single_lane_(single_lane) {
  // Lane names are unique per daemon run: a ledger left in /dev/shm by an earlier run is never
  // mistaken for a lane of this one.
  std::ostringstream prefix;
  prefix << "fs" << std::hex << (clock_() / 1'000'000) << std::dec << "-" << ::getpid();
  lane_prefix_ = prefix.str();
}

SharingHost::~SharingHost() {
  stop();
}

void SharingHost::set_ledger_directory(const std::string& directory) {
  std::lock_guard lock(mutex_);
  ledger_directory_ = directory;
}

void SharingHost::start(const std::string& gate_socket, const std::string& ledger_directory,
                        int period_ms) {
  {
    std::lock_guard lock(mutex_);
    if (!ledger_directory.empty()) ledger_directory_ = ledger_directory;
    gate_ = std::make_unique<lanes::GateServer>(arbiter_, gate_socket, 0666);
    // Any user's job may connect; it joins only a lane the daemon granted to its uid.
    gate_->set_admission([this](const std::string& lane, pid_t, uid_t uid, std::string* reason) {
      if (uid == 0) return true;
      for (uid_t owner : lane_uids(lane)) {
        if (owner == uid) return true;
      }
      *reason = "lane " + lane + " was not granted to uid " + std::to_string(uid);
      return false;
    });
    std::string error;
    if (!gate_->start(&error)) {
      gate_.reset();
      throw std::runtime_error("iteration gate: " + error);
    }
    gate_socket_ = gate_socket;
    // Jobs of a plan that was active before a restart get its lanes again from their next start
    // (without such records the service waits for its first use, as before).
    if (!store_.sharing_events_of_kinds(sharer::sharing_state_event_kinds()).empty()) {
      service_locked();
      after_change_locked();
    }
  }
  thread_ = std::thread([this, period_ms] {
    std::unique_lock lock(thread_mutex_);
    while (!stopping_) {
      if (thread_wake_.wait_for(lock, std::chrono::milliseconds(period_ms),
                                [this] { return stopping_; }))
        break;
      lock.unlock();
      try {
        poll();
      } catch (const std::exception& e) {
        log_ << "fleetscoped: sharing: " << e.what() << '\n';
      }
      lock.lock();
    }
  });
}

void SharingHost::stop() {
  {
    std::lock_guard lock(thread_mutex_);
    stopping_ = true;
  }
  thread_wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::unique_ptr<lanes::GateServer> gate;
  {
    std::lock_guard lock(mutex_);
    gate = std::move(gate_);
  }
  if (gate) gate->stop();  // every job's gate opens: jobs run unshared
  std::lock_guard lock(mutex_);
  try {
    after_change_locked();
  } catch (...) {
  }
}

sharer::SharingService& SharingHost::service_locked() {
  if (!service_) {
    auto gpus = gpu_source_();
    service_ = std::make_unique<sharer::SharingService>(
        gpus, lane_prefix_,
        [](pid_t pid, uint64_t start_ticks) {
          return lanes::process_alive(lanes::ProcessIdentity{pid, start_ticks});
        },
        memory_);
    service_->set_single_lane(single_lane_);
    log_ << "fleetscoped: sharing service over " << gpus.size() << " GPU(s), "
         << memory_.context_bytes / sharer::kMiB << " MiB CUDA context per job"
         << (single_lane_ ? ", one lane per GPU for unplanned jobs" : "") << "\n";
    resume_locked();
  }
  return *service_;
}

namespace {

// The four members of one struct moved into the other's, in order. Structured bindings name every
// member: one more on either side does not compile.
template <class To, class From>
To member_by_member(From from) {
  auto& [ts_ns, plan_id, kind, detail_json] = from;
  To to;
  auto& [to_ts_ns, to_plan_id, to_kind, to_detail_json] = to;
  to_ts_ns = ts_ns;
  to_plan_id = plan_id;
  to_kind = std::move(kind);
  to_detail_json = std::move(detail_json);
  return to;
}

}  // namespace

HostStore::SharingEventRow sharing_event_row(sharer::SharingRecord record) {
  return member_by_member<HostStore::SharingEventRow>(std::move(record));
}

sharer::SharingRecord sharing_record(HostStore::SharingEventRow row) {
  return member_by_member<sharer::SharingRecord>(std::move(row));
}

void SharingHost::resume_locked() {
  std::vector<sharer::SharingRecord> records;
  for (auto& row : store_.sharing_events_of_kinds(sharer::sharing_state_event_kinds()))
    records.push_back(sharing_record(std::move(row)));
  if (records.empty()) return;  // a first run, or nothing was ever planned or switched
  const auto state = sharer::replay_sharing_records(records);
  std::optional<sharer::ServicePlan> plan;
  if (state.active_plan_id) {
    const std::string source = "lane_plans row " + std::to_string(*state.active_plan_id);
    try {
      auto row = store_.lane_plan(*state.active_plan_id);
      if (!row) throw std::runtime_error(source + ": missing");
      plan = sharer::resumed_plan(row->id, row->created_ns, row->policy, row->plan_json, state,
                                  source);
    } catch (const std::exception& e) {
      // The daemon still serves; the plan is not applied until it is applied again.
      log_ << "fleetscoped: sharing: cannot restore the active plan: " << e.what() << '\n';
    }
  }
  if (plan)
    log_ << "fleetscoped: sharing: plan " << plan->id << " restored"
         << (state.automatic ? " (automatic)" : "") << '\n';
  service_->resume(state.enabled, state.automatic, state.max_slowdown, state.withdrawn_workflows,
                   std::move(plan), clock_());
}

void SharingHost::after_change_locked() {
  if (!service_) return;
  for (const auto& change : service_->take_ledger_changes()) {
    const std::string path = lanes::LaneSegment::path_for_lane(ledger_directory_, change.lane_name);
    switch (change.kind) {
      case sharer::LedgerChange::Kind::kCreate: {
        std::string error;
        ::unlink(path.c_str());  // a stale file of the same name cannot be ours
        const std::string token = lanes::LaneSegment::new_grant_token();
        auto segment = lanes::LaneSegment::open_or_create(
            path, static_cast<uint64_t>(change.capacity_bytes), &error, token);
        if (!segment) {
          log_ << "fleetscoped: sharing: ledger " << path << ": " << error << '\n';
          break;
        }
        // The lane's jobs map the ledger: it belongs to the uid the lane was granted to.
        auto uids = lane_uids_locked(change.lane_name);
        if (!uids.empty() && ::geteuid() == 0 && ::chown(path.c_str(), uids.front(), -1) != 0)
          log_ << "fleetscoped: sharing: cannot give " << path << " to uid " << uids.front()
               << '\n';
        ledgers_[change.lane_name] = std::move(segment);
        lane_tokens_[change.lane_name] = token;
        arbiter_.set_lane_policy(change.lane_name, change.policy);
        break;
      }
      case sharer::LedgerChange::Kind::kResize:
        if (auto found = ledgers_.find(change.lane_name); found != ledgers_.end())
          found->second->set_capacity(static_cast<uint64_t>(change.capacity_bytes));
        break;
      case sharer::LedgerChange::Kind::kRemove:
        ledgers_.erase(change.lane_name);
        lane_tokens_.erase(change.lane_name);
        ::unlink(path.c_str());
        break;
    }
  }
  std::vector<HostStore::SharingEventRow> rows = std::exchange(pending_events_, {});
  for (auto& record : service_->take_records())
    rows.push_back(sharing_event_row(std::move(record)));
  store_.add_sharing_events(rows);
  changed_.notify_all();
}

std::vector<uid_t> SharingHost::lane_uids_locked(const std::string& lane_name) const {
  std::vector<uid_t> out;
  if (!service_) return out;
  for (const auto& lane : service_->lanes()) {
    if (lane.lane_name != lane_name) continue;
    for (const auto& job : lane.jobs) out.push_back(job.uid);
  }
  return out;
}

std::vector<uid_t> SharingHost::lane_uids(const std::string& lane_name) {
  std::lock_guard lock(mutex_);
  return lane_uids_locked(lane_name);
}

sharer::LaneTicket SharingHost::request(sharer::LaneAsk ask) {
  ask.start_ticks = lanes::process_start_ticks(ask.pid);
  std::lock_guard lock(mutex_);
  auto ticket = service_locked().request(ask, clock_());
  after_change_locked();
  return ticket;
}

std::optional<sharer::LaneTicket> SharingHost::await(int64_t request_id,
                                                     std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  auto& service = service_locked();
  std::optional<sharer::LaneTicket> answer;
  changed_.wait_for(lock, timeout, [&] {
    answer = service.ticket(request_id);
    return !answer || answer->state != sharer::TicketState::kQueued;
  });
  return answer;
}

bool SharingHost::release(pid_t pid) {
  std::lock_guard lock(mutex_);
  bool released = service_locked().release(pid, clock_(), "released by request");
  after_change_locked();
  return released;
}

AppliedPlan SharingHost::apply_plan(const std::string& plan_json, const std::string& source,
                                    bool automatic, double max_slowdown,
                                    const std::string& policy) {
  sharer::ServicePlan plan;
  plan.placements = sharer::parse_plan_placements(plan_json, source);
  if (plan.placements.empty())
    throw std::invalid_argument(source + ": the plan places no job of a named workflow");
  json stored = json::parse(plan_json);
  // The lanes take turns by the policy the plan's slowdowns were predicted for (its
  // turn_policy; fifo without one): the one asked for, or refused when it is another.
  const std::string planned = sharer::turn_order_name(sharer::plan_turn_order(stored, source));
  const std::string turns = policy.empty() ? planned : policy;
  if (!lanes::make_turn_policy(turns))
    throw std::invalid_argument("turn policy '" + turns + "': expected fifo, srtf or priority");
  if (turns != planned)
    throw std::invalid_argument(source + " was planned for turn policy " + planned +
                                " (its predicted slowdowns assume it), not " + turns +
                                ": plan again for " + turns + " (share plan --policy " + turns +
                                ")");
  plan.automatic = automatic;
  plan.max_slowdown = max_slowdown;
  plan.policy = turns;
  plan.created_ns = clock_();
  // lane_plans.plan keeps the planner's document and how it was applied.
  stored["applied_as"] = {{"automatic", automatic},
                          {"max_slowdown", max_slowdown},
                          {"policy", turns},
                          {"workflows", plan.workflows()}};
  plan.id = store_.add_lane_plan(plan.created_ns, turns, stored.dump());
  std::lock_guard lock(mutex_);
  AppliedPlan applied;
  applied.plan_id = plan.id;
  applied.workflows = plan.workflows();
  applied.superseded = service_locked().apply_plan(std::move(plan), clock_());
  after_change_locked();
  return applied;
}

void SharingHost::off() {
  std::lock_guard lock(mutex_);
  service_locked().off(clock_());
  after_change_locked();
}

void SharingHost::set_automatic(bool on, double max_slowdown) {
  std::lock_guard lock(mutex_);
  service_locked().set_automatic(on, max_slowdown, clock_());
  after_change_locked();
}

SharingSnapshot SharingHost::snapshot() {
  std::lock_guard lock(mutex_);
  auto& service = service_locked();
  SharingSnapshot out;
  out.enabled = service.enabled();
  out.automatic = service.automatic();
  out.max_slowdown = service.max_slowdown();
  out.gpus = service.gpus();
  for (const auto& gpu : out.gpus) out.gpu_free_bytes.push_back(service.free_bytes(gpu.index));
  out.lanes = service.lanes();
  for (const auto& [name, ledger] : ledgers_) out.usage[name] = ledger->usage();
  out.job_denials = job_denials_;
  out.stray_ledgers = stray_ledgers_locked();
  out.queued = service.queued();
  out.plans = service.plans();
  out.gate_socket = gate_socket_;
  return out;
}

std::optional<pid_t> SharingHost::job_pid_of_locked(pid_t member_pid) {
  if (auto known = member_job_.find(member_pid); known != member_job_.end()) {
    if (service_->job_of(known->second)) return known->second;
    member_job_.erase(known);
  }
  std::vector<pid_t> chain{member_pid};
  for (pid_t parent : ancestors_of(member_pid, kAncestorDepth)) chain.push_back(parent);
  for (pid_t candidate : chain) {
    if (service_->job_of(candidate)) {
      member_job_[member_pid] = candidate;
      return candidate;
    }
  }
  return std::nullopt;
}

void SharingHost::feed_boundaries_locked() {
  for (const auto& event : arbiter_.events_since(last_event_)) {
    last_event_ = event.sequence;
    if (event.kind == lanes::GateEventKind::kLeft) member_job_.erase(event.pid);
  }
  // Iteration times come from the ledgers' step counters, which every lane member keeps at each
  // boundary (LaneSegment::record_step): jobs alone in a lane beside other lanes on the GPU are
  // timed as well as those that take turns (the gate sees only handovers). Per member, the
  // iterations since the last poll and their mean time go to the service.
  std::map<std::pair<pid_t, uint64_t>, MemberSteps> seen;
  for (const auto& [name, ledger] : ledgers_) {
    for (const auto& member : ledger->members()) {
      const std::pair<pid_t, uint64_t> key{member.process.pid, member.process.start_ticks};
      MemberSteps now{member.steps, member.last_step_ns, member.denied_allocations};
      MemberSteps last;
      if (auto before = member_steps_.find(key); before != member_steps_.end())
        last = before->second;
      if (now.steps > last.steps && last.steps > 0 && now.last_step_ns > last.last_step_ns) {
        const auto count = static_cast<int64_t>(now.steps - last.steps);
        const auto mean = static_cast<int64_t>((now.last_step_ns - last.last_step_ns) / count);
        if (auto job = job_pid_of_locked(member.process.pid))
          service_->record_iterations(*job, count, mean);
      }
      if (now.denied > last.denied)
        count_denials_locked(name, member.process.pid, now.denied - last.denied, now.denied);
      seen[key] = now;
    }
  }
  member_steps_ = std::move(seen);  // members that left are forgotten
}

void SharingHost::count_denials_locked(const std::string& lane, pid_t member_pid, uint64_t fresh,
                                       uint64_t member_total) {
  std::string workflow;
  int gpu = -1;
  pid_t job_pid = member_pid;
  if (auto job = job_pid_of_locked(member_pid)) {
    job_pid = *job;
    if (const auto* held = service_->job_of(*job)) {
      workflow = held->workflow;
      gpu = held->gpu_index;
    }
  }
  job_denials_[job_pid] += fresh;
  denied_totals_[{workflow, gpu}] += fresh;
  // A lane out-of-memory refusal the operator can tell from a real one: an event per poll in
  // which the job was refused more allocations.
  json detail = {{"pid", job_pid},
                 {"member_pid", member_pid},
                 {"workflow", workflow},
                 {"lane", lane},
                 {"gpu", gpu},
                 {"denied_allocations", fresh},
                 {"member_denied_total", member_total}};
  pending_events_.push_back({clock_(), std::nullopt, "lane_denials", detail.dump()});
}

std::optional<std::string> SharingHost::lane_token(const std::string& lane_name) {
  std::lock_guard lock(mutex_);
  auto found = lane_tokens_.find(lane_name);
  if (found == lane_tokens_.end()) return std::nullopt;
  return found->second;
}

std::map<std::pair<std::string, int>, uint64_t> SharingHost::denied_totals() {
  std::lock_guard lock(mutex_);
  return denied_totals_;
}

void SharingHost::on() {
  std::lock_guard lock(mutex_);
  service_locked().on(clock_());
  after_change_locked();
}

std::vector<std::string> SharingHost::stray_ledgers_locked() const {
  std::vector<std::string> out;
  DIR* directory = ::opendir(ledger_directory_.c_str());
  if (!directory) return out;
  const std::string prefix = "fleetscope-lane-";
  while (dirent* entry = ::readdir(directory)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string lane = name.substr(prefix.size());
    if (ledgers_.count(lane) || lane.find(".init.") != std::string::npos) continue;
    out.push_back(lanes::LaneSegment::path_for_lane(ledger_directory_, lane));
  }
  ::closedir(directory);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> SharingHost::remove_stray_ledgers() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> removed;
  for (const auto& path : stray_ledgers_locked())
    if (::unlink(path.c_str()) == 0) removed.push_back(path);
  if (!removed.empty()) {
    json detail = {{"removed", removed}};
    store_.add_sharing_events({{clock_(), std::nullopt, "stray_ledgers_removed", detail.dump()}});
  }
  return removed;
}

void SharingHost::poll() {
  std::lock_guard lock(mutex_);
  if (!service_) return;
  const int64_t now = clock_();
  feed_boundaries_locked();
  service_->reap(now);
  service_->check_slowdowns(now);
  after_change_locked();
}

}  // namespace fleetscope::daemon
