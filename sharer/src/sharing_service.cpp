#include "fleetscope/sharer/sharing_service.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace fleetscope::sharer {

namespace {

using json = nlohmann::json;

// Unplanned jobs get FIFO turns: the exclusive baseline every cluster runs today.
constexpr const char* kDefaultTurnPolicy = "fifo";

int64_t number_field(const json& object, const char* key, const std::string& where) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return 0;
  if (!found->is_number()) {
    throw std::runtime_error(where + ": '" + key + "' must be a number");
  }
  return found->get<int64_t>();
}

std::string detail(std::initializer_list<std::pair<const char*, json>> fields) {
  json out = json::object();
  for (const auto& [key, value] : fields) out[key] = value;
  return out.dump();
}

}  // namespace

std::string_view ticket_state_name(TicketState state) {
  switch (state) {
    case TicketState::kGranted:
      return "granted";
    case TicketState::kQueued:
      return "queued";
    case TicketState::kUnshared:
      return "unshared";
  }
  return "unknown";
}

std::vector<PlanPlacement> parse_plan_placements(const std::string& json_text,
                                                 const std::string& source) {
  json document;
  try {
    document = json::parse(json_text);
  } catch (const json::parse_error& error) {
    throw std::runtime_error(source + ": not JSON (byte " + std::to_string(error.byte) +
                             "): expected the output of `fleetscope share plan --format json`");
  }
  if (!document.is_object() || !document.contains("gpus") || !document["gpus"].is_array() ||
      !document.contains("jobs") || !document["jobs"].is_array()) {
    throw std::runtime_error(source +
                             ": expected an object with 'gpus' and 'jobs' arrays (the output of "
                             "`fleetscope share plan --format json`)");
  }
  // Lane capacities by (GPU label, lane id).
  std::map<std::pair<std::string, int>, int64_t> capacity;
  for (size_t g = 0; g < document["gpus"].size(); ++g) {
    const json& gpu = document["gpus"][g];
    const std::string where = source + ": gpus[" + std::to_string(g) + "]";
    if (!gpu.is_object() || !gpu.contains("gpu") || !gpu["gpu"].is_string() ||
        !gpu.contains("lanes") || !gpu["lanes"].is_array()) {
      throw std::runtime_error(where + ": expected {\"gpu\": NAME, \"lanes\": [...]}");
    }
    for (size_t l = 0; l < gpu["lanes"].size(); ++l) {
      const json& lane = gpu["lanes"][l];
      const std::string lane_where = where + ".lanes[" + std::to_string(l) + "]";
      if (!lane.is_object()) throw std::runtime_error(lane_where + ": expected an object");
      capacity[{gpu["gpu"].get<std::string>(),
                static_cast<int>(number_field(lane, "lane_id", lane_where))}] =
          number_field(lane, "capacity_bytes", lane_where);
    }
  }
  std::vector<PlanPlacement> placements;
  for (size_t j = 0; j < document["jobs"].size(); ++j) {
    const json& job = document["jobs"][j];
    const std::string where = source + ": jobs[" + std::to_string(j) + "]";
    if (!job.is_object() || !job.contains("workflow") || !job["workflow"].is_string()) {
      throw std::runtime_error(where + ": expected an object with a 'workflow' string");
    }
    const std::string to_gpu = job.value("to_gpu", std::string());
    if (to_gpu.empty()) continue;  // the planner could not place it: it runs as before
    PlanPlacement placement;
    placement.job_id = job.value("job_id", std::string());
    placement.workflow = job["workflow"].get<std::string>();
    if (placement.workflow.empty()) continue;  // nothing to recognise its restarts by
    placement.gpu = to_gpu;
    placement.lane = static_cast<int>(number_field(job, "lane_id", where));
    auto lane = capacity.find({to_gpu, placement.lane});
    if (lane == capacity.end()) {
      throw std::runtime_error(where + ": lane " + std::to_string(placement.lane) + " on '" +
                               to_gpu + "' is not among the plan's gpus[].lanes");
    }
    placement.lane_capacity_bytes = lane->second;
    placement.persistent_bytes = number_field(job, "persistent_bytes", where);
    placement.ephemeral_peak_bytes = number_field(job, "ephemeral_peak_bytes", where);
    placement.solo_iteration_ns = number_field(job, "solo_iteration_ns", where);
    if (auto bound = job.find("max_slowdown"); bound != job.end() && bound->is_number()) {
      placement.max_slowdown = bound->get<double>();
    }
    if (placement.persistent_bytes < 0 || placement.ephemeral_peak_bytes < 0 ||
        placement.lane_capacity_bytes <= 0) {
      throw std::runtime_error(where +
                               ": memory figures must be non-negative and the lane's "
                               "capacity positive");
    }
    placements.push_back(std::move(placement));
  }
  return placements;
}

std::vector<std::string> ServicePlan::workflows() const {
  std::vector<std::string> out;
  for (const auto& p : placements) {
    if (std::find(out.begin(), out.end(), p.workflow) == out.end()) out.push_back(p.workflow);
  }
  return out;
}

std::optional<double> ServiceJob::measured_slowdown() const {
  if (solo_iteration_ns <= 0 ||
      recent_intervals_ns.size() < SharingService::kMinIntervalsForVerdict) {
    return std::nullopt;
  }
  // The median of the recent iterations: one long iteration (a checkpoint, an evaluation) must
  // not withdraw a plan by itself.
  std::vector<int64_t> sorted(recent_intervals_ns.begin(), recent_intervals_ns.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? static_cast<double>(sorted[n / 2])
                              : (static_cast<double>(sorted[n / 2 - 1]) + sorted[n / 2]) / 2.0;
  return median / static_cast<double>(solo_iteration_ns);
}

SharingService::SharingService(std::vector<ServiceGpu> gpus, std::string lane_prefix,
                               Liveness alive, MemoryModel memory)
    : gpus_(std::move(gpus)),
      lane_prefix_(std::move(lane_prefix)),
      alive_(std::move(alive)),
      memory_(memory) {
  for (const auto& gpu : gpus_) {
    states_.push_back(GpuState{gpu, LaneAllocator(gpu.capacity_bytes, memory_), {}, {}});
  }
}

void SharingService::record(int64_t ts_ns, std::optional<int64_t> plan_id, const std::string& kind,
                            const std::string& detail_json) {
  records_.push_back(SharingRecord{ts_ns, plan_id, kind, detail_json});
}

const ServicePlan* SharingService::active_plan() const {
  return active_plan_ ? &plans_[*active_plan_] : nullptr;
}

const PlanPlacement* SharingService::placement_for(const std::string& workflow) const {
  const ServicePlan* plan = active_plan();
  if (!plan || !enabled_) return nullptr;
  for (const auto& placement : plan->placements) {
    if (placement.workflow == workflow) return &placement;
  }
  return nullptr;
}

std::optional<size_t> SharingService::gpu_for_label(const std::string& label) {
  if (states_.empty()) return std::nullopt;
  if (auto known = label_gpu_.find(label); known != label_gpu_.end()) return known->second;
  std::optional<size_t> chosen;
  // 1. The label names a GPU's UUID.
  for (size_t i = 0; i < states_.size() && !chosen; ++i) {
    if (!states_[i].gpu.uuid.empty() && label.find(states_[i].gpu.uuid) != std::string::npos)
      chosen = i;
  }
  // 2. A bare index, or "gpuN" as `share plan` writes for GPUs from trace databases.
  if (!chosen) {
    std::string digits;
    auto marker = label.rfind("gpu");
    if (marker != std::string::npos) {
      for (size_t i = marker + 3;
           i < label.size() && std::isdigit(static_cast<unsigned char>(label[i])); ++i)
        digits += label[i];
    } else if (!label.empty() && std::all_of(label.begin(), label.end(), [](char c) {
                 return std::isdigit(static_cast<unsigned char>(c));
               })) {
      digits = label;
    }
    if (!digits.empty() && digits.size() < 6) {
      const int index = std::stoi(digits);
      for (size_t i = 0; i < states_.size(); ++i) {
        if (states_[i].gpu.index == index) chosen = i;
      }
    }
  }
  // 3. Otherwise the plan's GPUs take this host's GPUs in order, each label its own GPU.
  if (!chosen) {
    for (size_t i = 0; i < states_.size() && !chosen; ++i) {
      bool taken = false;
      for (const auto& [other, gpu] : label_gpu_) taken = taken || gpu == i;
      if (!taken) chosen = i;
    }
  }
  if (chosen) label_gpu_[label] = *chosen;
  return chosen;
}

std::string SharingService::lane_name(const GpuState& gpu, int lane_id) const {
  return lane_prefix_ + "-g" + std::to_string(gpu.gpu.index) + "-l" + std::to_string(lane_id);
}

void SharingService::sync_ledgers(GpuState& gpu) {
  std::map<int, int64_t> now;
  for (const auto& lane : gpu.allocator.lanes()) now[lane.id] = lane.capacity_bytes;
  for (const auto& [id, bytes] : gpu.ledger_bytes) {
    if (!now.count(id)) {
      ledger_changes_.push_back(
          {LedgerChange::Kind::kRemove, lane_name(gpu, id), 0, gpu.lane_policy[id]});
      gpu.lane_policy.erase(id);
    }
  }
  for (const auto& [id, bytes] : now) {
    auto before = gpu.ledger_bytes.find(id);
    if (before == gpu.ledger_bytes.end()) {
      auto policy = gpu.lane_policy.find(id);
      if (policy == gpu.lane_policy.end())
        policy = gpu.lane_policy.emplace(id, kDefaultTurnPolicy).first;
      ledger_changes_.push_back(
          {LedgerChange::Kind::kCreate, lane_name(gpu, id), bytes, policy->second});
    } else if (before->second != bytes) {
      ledger_changes_.push_back(
          {LedgerChange::Kind::kResize, lane_name(gpu, id), bytes, gpu.lane_policy[id]});
    }
  }
  gpu.ledger_bytes = std::move(now);
}

LaneTicket SharingService::place(const LaneAsk& ask, int64_t request_id, int64_t now_ns) {
  LaneTicket ticket;
  ticket.request_id = request_id;
  ticket.pid = ask.pid;
  ticket.uid = ask.uid;
  const PlanPlacement* planned = placement_for(ask.workflow);
  MemoryDemand demand;
  demand.persistent_bytes = ask.persistent_bytes.value_or(planned ? planned->persistent_bytes : 0);
  demand.ephemeral_peak_bytes =
      ask.ephemeral_bytes.value_or(planned ? planned->ephemeral_peak_bytes : 0);

  const int64_t job_key = next_job_key_;
  std::optional<size_t> gpu_index;
  std::optional<Placement> placement;
  std::string policy = kDefaultTurnPolicy;
  std::optional<int64_t> plan_id;
  if (planned) {
    const ServicePlan& plan = *active_plan();
    policy = plan.policy;
    gpu_index = gpu_for_label(planned->gpu);
    if (gpu_index) {
      GpuState& gpu = states_[*gpu_index];
      const auto key = std::make_tuple(plan.id, planned->gpu, planned->lane);
      auto lane = planned_lanes_.find(key);
      if (lane != planned_lanes_.end() && lane->second.first == *gpu_index &&
          gpu.allocator.find_lane(lane->second.second)) {
        placement = gpu.allocator.admit_into(job_key, demand, lane->second.second);
      } else {
        AdmitOptions options;
        options.allow_shared_lane = false;
        options.new_lane_bytes =
            std::max(planned->lane_capacity_bytes, memory_.lane_bytes_with(LaneLoad{}, demand));
        placement = gpu.allocator.admit(job_key, demand, options);
        if (placement) {
          planned_lanes_[key] = {*gpu_index, placement->lane_id};
          gpu.lane_policy[placement->lane_id] = policy;
        }
      }
      if (placement) plan_id = plan.id;
    }
  }
  // Not planned (or its planned lane cannot take it now): best fit on the hinted GPU, else on
  // any GPU, the one that keeps the least spare room.
  if (!placement) {
    policy = kDefaultTurnPolicy;
    AdmitOptions options;
    if (single_lane_) options.max_lanes = 1;
    std::optional<std::pair<size_t, Placement>> best;
    for (size_t i = 0; i < states_.size(); ++i) {
      const auto& gpu = states_[i].gpu;
      if (!ask.gpu_hint.empty() && ask.gpu_hint != gpu.uuid &&
          ask.gpu_hint != std::to_string(gpu.index))
        continue;
      auto probe = states_[i].allocator.probe(demand, options);
      if (probe && (!best || probe->leftover_bytes < best->second.leftover_bytes))
        best = {{i, *probe}};
    }
    if (best) {
      gpu_index = best->first;
      placement = states_[best->first].allocator.admit(job_key, demand, options);
    }
  }
  if (!placement || !gpu_index) {
    ticket.state = TicketState::kQueued;
    ticket.reason = "no GPU has room for P " + std::to_string(demand.persistent_bytes) + " + T " +
                    std::to_string(demand.ephemeral_peak_bytes) +
                    " bytes now; waiting for a lane to free";
    ticket.plan_id = planned ? std::optional<int64_t>(active_plan()->id) : std::nullopt;
    return ticket;
  }
  ++next_job_key_;
  GpuState& gpu = states_[*gpu_index];
  sync_ledgers(gpu);
  const Lane* lane = gpu.allocator.find_lane(placement->lane_id);
  ServiceJob job;
  job.job_key = job_key;
  job.request_id = request_id;
  job.pid = ask.pid;
  job.start_ticks = ask.start_ticks;
  job.uid = ask.uid;
  job.workflow = ask.workflow;
  job.persistent_bytes = demand.persistent_bytes;
  job.ephemeral_bytes = demand.ephemeral_peak_bytes;
  job.granted_ns = now_ns;
  job.plan_id = plan_id;
  job.gpu_index = gpu.gpu.index;
  job.lane_name = lane_name(gpu, lane->id);
  if (plan_id) {
    job.solo_iteration_ns = planned->solo_iteration_ns;
    job.max_slowdown = planned->max_slowdown;
  }
  ticket.state = TicketState::kGranted;
  ticket.gpu_index = gpu.gpu.index;
  ticket.gpu_uuid = gpu.gpu.uuid;
  ticket.lane_name = job.lane_name;
  ticket.lane_bytes = lane->capacity_bytes;
  ticket.policy = gpu.lane_policy.count(lane->id) ? gpu.lane_policy[lane->id] : policy;
  ticket.plan_id = plan_id;
  record(now_ns, plan_id, "job_admitted",
         detail({{"pid", ask.pid},
                 {"uid", ask.uid},
                 {"workflow", ask.workflow},
                 {"gpu", gpu.gpu.uuid},
                 {"gpu_index", gpu.gpu.index},
                 {"lane", job.lane_name},
                 {"lane_bytes", lane->capacity_bytes},
                 {"new_lane", placement->new_lane},
                 {"persistent_bytes", demand.persistent_bytes},
                 {"ephemeral_bytes", demand.ephemeral_peak_bytes},
                 {"policy", ticket.policy},
                 {"planned", plan_id.has_value()}}));
  jobs_[ask.pid] = std::move(job);
  return ticket;
}

LaneTicket SharingService::request(const LaneAsk& ask, int64_t now_ns) {
  if (ask.workflow.empty()) throw std::invalid_argument("a lane request needs a workflow name");
  if (jobs_.count(ask.pid)) {
    throw std::invalid_argument("pid " + std::to_string(ask.pid) + " already holds lane " +
                                jobs_.at(ask.pid).lane_name);
  }
  for (const auto& pending : queue_) {
    if (pending.ask.pid == ask.pid) {
      throw std::invalid_argument("pid " + std::to_string(ask.pid) +
                                  " already waits for a lane (request " +
                                  std::to_string(pending.request_id) + ")");
    }
  }
  if (!ask.gpu_hint.empty() &&
      std::none_of(states_.begin(), states_.end(), [&](const GpuState& gpu) {
        return ask.gpu_hint == gpu.gpu.uuid || ask.gpu_hint == std::to_string(gpu.gpu.index);
      })) {
    throw std::invalid_argument("no GPU '" + ask.gpu_hint +
                                "' on this host (give a UUID or an "
                                "index as `fleetscope share status` lists them)");
  }
  const int64_t request_id = next_request_id_++;
  LaneTicket ticket;
  ticket.request_id = request_id;
  ticket.pid = ask.pid;
  ticket.uid = ask.uid;
  const PlanPlacement* planned = placement_for(ask.workflow);
  auto unshared = [&](const std::string& reason, const char* kind) {
    ticket.state = TicketState::kUnshared;
    ticket.reason = reason;
    record(now_ns, std::nullopt, kind,
           detail({{"pid", ask.pid}, {"workflow", ask.workflow}, {"reason", reason}}));
    return ticket;  // final: nobody awaits it, so it is not kept
  };
  if (!enabled_) return unshared("sharing is off on this host", "job_unshared");
  if (!planned && withdrawn_workflows_.count(ask.workflow)) {
    return unshared("the plan that named workflow '" + ask.workflow +
                        "' was withdrawn (measured slowdown over its bound): it runs alone",
                    "job_unshared");
  }
  if (!planned && ask.planned_only) {
    return unshared("no active plan names workflow '" + ask.workflow + "'", "job_unshared");
  }
  if (!planned && (!ask.persistent_bytes || !ask.ephemeral_bytes)) {
    throw std::invalid_argument("no active plan names workflow '" + ask.workflow +
                                "': give its persistent and ephemeral memory (P and T)");
  }
  if (ask.persistent_bytes.value_or(0) < 0 || ask.ephemeral_bytes.value_or(0) < 0 ||
      (!planned && *ask.persistent_bytes + *ask.ephemeral_bytes <= 0)) {
    throw std::invalid_argument("persistent and ephemeral memory must be >= 0 and not both 0");
  }
  if (!planned) {
    bool could_ever_fit = false;
    const MemoryDemand demand{*ask.persistent_bytes, *ask.ephemeral_bytes, -1.0};
    for (const auto& gpu : states_) {
      could_ever_fit =
          could_ever_fit || LaneAllocator(gpu.gpu.capacity_bytes, memory_).probe(demand);
    }
    if (!could_ever_fit) {
      throw std::invalid_argument(
          "no GPU on this host holds P " + std::to_string(*ask.persistent_bytes) + " + T " +
          std::to_string(*ask.ephemeral_bytes) + " bytes with its margin and CUDA context");
    }
  }
  ticket = place(ask, request_id, now_ns);
  if (ticket.state == TicketState::kQueued) {
    queue_.push_back(Pending{ask, request_id, now_ns});
    record(now_ns, ticket.plan_id, "job_queued",
           detail({{"pid", ask.pid},
                   {"workflow", ask.workflow},
                   {"position", queue_.size()},
                   {"reason", ticket.reason}}));
  }
  answered_[request_id] = ticket;
  return ticket;
}

std::optional<LaneTicket> SharingService::ticket(int64_t request_id) const {
  auto found = answered_.find(request_id);
  if (found == answered_.end()) return std::nullopt;
  return found->second;
}

void SharingService::release_job(std::map<pid_t, ServiceJob>::iterator job, int64_t now_ns,
                                 const std::string& why) {
  for (auto& gpu : states_) {
    if (gpu.gpu.index != job->second.gpu_index) continue;
    gpu.allocator.release(job->second.job_key);
    sync_ledgers(gpu);
  }
  json fields = {{"pid", job->second.pid},
                 {"workflow", job->second.workflow},
                 {"lane", job->second.lane_name},
                 {"reason", why},
                 {"iterations", job->second.iterations}};
  if (auto slowdown = job->second.measured_slowdown()) fields["measured_slowdown"] = *slowdown;
  record(now_ns, job->second.plan_id, "job_released", fields.dump());
  answered_.erase(job->second.request_id);
  jobs_.erase(job);
}

bool SharingService::release(pid_t pid, int64_t now_ns, const std::string& why) {
  auto job = jobs_.find(pid);
  if (job != jobs_.end()) {
    release_job(job, now_ns, why);
    retry_queue(now_ns);
    return true;
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->ask.pid != pid) continue;
    record(now_ns, std::nullopt, "job_dequeued",
           detail({{"pid", pid}, {"workflow", it->ask.workflow}, {"reason", why}}));
    answered_.erase(it->request_id);
    queue_.erase(it);
    return true;
  }
  return false;
}

int SharingService::reap(int64_t now_ns) {
  std::vector<pid_t> gone;
  for (const auto& [pid, job] : jobs_) {
    if (!alive_(pid, job.start_ticks)) gone.push_back(pid);
  }
  for (const auto& pending : queue_) {
    if (!alive_(pending.ask.pid, pending.ask.start_ticks)) gone.push_back(pending.ask.pid);
  }
  for (pid_t pid : gone) release(pid, now_ns, "process exited");
  return static_cast<int>(gone.size());
}

void SharingService::retry_queue(int64_t now_ns) {
  // Admission in arrival order, later requests may start when an earlier one does not fit
  // (backfilling, as the simulator's sharing policies do).
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (!enabled_) {
      LaneTicket& answer = answered_[it->request_id];
      answer.state = TicketState::kUnshared;
      answer.reason = "sharing was switched off while the job waited";
      record(
          now_ns, std::nullopt, "job_unshared",
          detail(
              {{"pid", it->ask.pid}, {"workflow", it->ask.workflow}, {"reason", answer.reason}}));
      it = queue_.erase(it);
      continue;
    }
    LaneTicket ticket = place(it->ask, it->request_id, now_ns);
    if (ticket.state == TicketState::kGranted) {
      answered_[it->request_id] = ticket;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<int64_t> SharingService::apply_plan(ServicePlan plan, int64_t now_ns) {
  std::optional<int64_t> superseded;
  if (active_plan_) {
    ServicePlan& old = plans_[*active_plan_];
    old.active = false;
    old.withdrawn_reason = "superseded by plan " + std::to_string(plan.id);
    superseded = old.id;
    record(now_ns, old.id, "plan_superseded", detail({{"by_plan", plan.id}}));
  }
  plan.active = true;
  enabled_ = true;
  automatic_ = plan.automatic;
  if (plan.automatic) max_slowdown_ = plan.max_slowdown;
  for (const auto& workflow : plan.workflows()) withdrawn_workflows_.erase(workflow);
  label_gpu_.clear();
  const auto workflows = plan.workflows();
  record(now_ns, plan.id, "plan_applied",
         detail({{"workflows", workflows},
                 {"automatic", plan.automatic},
                 {"max_slowdown", plan.max_slowdown},
                 {"policy", plan.policy},
                 {"placements", plan.placements.size()}}));
  plans_.push_back(std::move(plan));
  active_plan_ = plans_.size() - 1;
  retry_queue(now_ns);
  return superseded;
}

void SharingService::off(int64_t now_ns) {
  std::optional<int64_t> plan_id;
  if (active_plan_) {
    ServicePlan& plan = plans_[*active_plan_];
    plan.active = false;
    plan.withdrawn_reason = "sharing switched off";
    plan_id = plan.id;
    switched_off_plan_ = active_plan_;
    active_plan_.reset();
  }
  enabled_ = false;
  automatic_ = false;
  record(now_ns, plan_id, "sharing_off",
         detail({{"lanes_left", jobs_.size()}, {"queued_answered_unshared", queue_.size()}}));
  retry_queue(now_ns);  // answers every queued request "unshared"
}

void SharingService::on(int64_t now_ns) {
  std::optional<int64_t> plan_id;
  if (!active_plan_ && switched_off_plan_) {
    ServicePlan& plan = plans_[*switched_off_plan_];
    plan.active = true;
    plan.withdrawn_reason.clear();
    plan_id = plan.id;
    active_plan_ = switched_off_plan_;
    label_gpu_.clear();
  }
  switched_off_plan_.reset();
  enabled_ = true;
  record(now_ns, plan_id, "sharing_on", detail({{"plan_applied_again", plan_id.has_value()}}));
}

void SharingService::set_automatic(bool on, double max_slowdown, int64_t now_ns) {
  automatic_ = on;
  if (on) {
    enabled_ = true;
    max_slowdown_ = max_slowdown;
  }
  record(now_ns, active_plan_ ? std::optional<int64_t>(plans_[*active_plan_].id) : std::nullopt,
         on ? "automatic_on" : "automatic_off", detail({{"max_slowdown", max_slowdown}}));
}

void SharingService::resume(bool enabled, bool automatic, double max_slowdown,
                            const std::set<std::string>& withdrawn_workflows,
                            std::optional<ServicePlan> plan, int64_t now_ns) {
  enabled_ = enabled;
  automatic_ = automatic;
  max_slowdown_ = max_slowdown;
  withdrawn_workflows_ = withdrawn_workflows;
  if (!plan) return;
  plan->active = true;
  for (const auto& workflow : plan->workflows()) withdrawn_workflows_.erase(workflow);
  record(now_ns, plan->id, "plan_restored",
         detail({{"workflows", plan->workflows()},
                 {"automatic", automatic},
                 {"max_slowdown", max_slowdown},
                 {"policy", plan->policy},
                 {"placements", plan->placements.size()}}));
  plans_.push_back(std::move(*plan));
  active_plan_ = plans_.size() - 1;
  label_gpu_.clear();
}

void SharingService::record_boundary(pid_t pid, int64_t ts_ns) {
  auto found = jobs_.find(pid);
  if (found == jobs_.end()) return;
  ServiceJob& job = found->second;
  if (job.last_boundary_ns > 0 && ts_ns > job.last_boundary_ns) {
    job.recent_intervals_ns.push_back(ts_ns - job.last_boundary_ns);
    if (job.recent_intervals_ns.size() > kMeasuredIntervals) job.recent_intervals_ns.pop_front();
    ++job.iterations;
  }
  job.last_boundary_ns = ts_ns;
}

void SharingService::record_iterations(pid_t pid, int64_t count, int64_t mean_interval_ns) {
  auto found = jobs_.find(pid);
  if (found == jobs_.end() || count <= 0 || mean_interval_ns <= 0) return;
  ServiceJob& job = found->second;
  const int64_t kept = std::min<int64_t>(count, static_cast<int64_t>(kMeasuredIntervals));
  for (int64_t i = 0; i < kept; ++i) job.recent_intervals_ns.push_back(mean_interval_ns);
  while (job.recent_intervals_ns.size() > kMeasuredIntervals) job.recent_intervals_ns.pop_front();
  job.iterations += count;
}

bool SharingService::check_slowdowns(int64_t now_ns) {
  if (!automatic_ || !active_plan_) return false;
  ServicePlan& plan = plans_[*active_plan_];
  for (const auto& [pid, job] : jobs_) {
    if (job.plan_id != plan.id) continue;
    const auto slowdown = job.measured_slowdown();
    const double bound = max_slowdown_ > 0 ? max_slowdown_ : job.max_slowdown;
    if (!slowdown || bound <= 0 || *slowdown <= bound) continue;
    char text[160];
    std::snprintf(text, sizeof text, "job %d of workflow '%s' measured slowdown %.3f > %.3f",
                  static_cast<int>(pid), job.workflow.c_str(), *slowdown, bound);
    plan.active = false;
    plan.withdrawn_reason = text;
    for (const auto& workflow : plan.workflows()) withdrawn_workflows_.insert(workflow);
    // Every job of the plan with its figures: the record says what the decision saw.
    json jobs = json::array();
    for (const auto& [other_pid, other] : jobs_) {
      if (other.plan_id != plan.id) continue;
      const auto measured = other.measured_slowdown();
      jobs.push_back({{"pid", other_pid},
                      {"workflow", other.workflow},
                      {"lane", other.lane_name},
                      {"gpu", other.gpu_index},
                      {"measured_slowdown", measured ? json(*measured) : json(nullptr)},
                      {"solo_iteration_ns", other.solo_iteration_ns},
                      {"iterations", other.iterations}});
    }
    record(now_ns, plan.id, "plan_withdrawn",
           detail({{"pid", pid},
                   {"workflow", job.workflow},
                   {"measured_slowdown", *slowdown},
                   {"max_slowdown", bound},
                   {"solo_iteration_ns", job.solo_iteration_ns},
                   {"iterations", job.iterations},
                   {"reason", text},
                   {"jobs", jobs}}));
    active_plan_.reset();
    return true;
  }
  return false;
}

std::vector<SharingRecord> SharingService::take_records() {
  return std::exchange(records_, {});
}

std::vector<LedgerChange> SharingService::take_ledger_changes() {
  return std::exchange(ledger_changes_, {});
}

int64_t SharingService::free_bytes(int gpu_index) const {
  for (const auto& gpu : states_) {
    if (gpu.gpu.index == gpu_index) return gpu.allocator.free_bytes();
  }
  return 0;
}

std::vector<ServiceLane> SharingService::lanes() const {
  std::vector<ServiceLane> out;
  for (const auto& gpu : states_) {
    for (const auto& lane : gpu.allocator.lanes()) {
      ServiceLane row;
      row.gpu_index = gpu.gpu.index;
      row.gpu_uuid = gpu.gpu.uuid;
      row.lane_name = lane_name(gpu, lane.id);
      row.offset_bytes = lane.offset_bytes;
      row.capacity_bytes = lane.capacity_bytes;
      auto policy = gpu.lane_policy.find(lane.id);
      row.policy = policy == gpu.lane_policy.end() ? kDefaultTurnPolicy : policy->second;
      for (const auto& [pid, job] : jobs_) {
        if (job.lane_name == row.lane_name) row.jobs.push_back(job);
      }
      out.push_back(std::move(row));
    }
  }
  return out;
}

std::vector<LaneTicket> SharingService::queued() const {
  std::vector<LaneTicket> out;
  for (const auto& pending : queue_) {
    auto answer = answered_.find(pending.request_id);
    if (answer != answered_.end()) out.push_back(answer->second);
  }
  return out;
}

const ServiceJob* SharingService::job_of(pid_t pid) const {
  auto found = jobs_.find(pid);
  return found == jobs_.end() ? nullptr : &found->second;
}

}  // namespace fleetscope::sharer
