#include "fleetscope/analyzer/fleet.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/gpu_utilization.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/error.h"

namespace fleetscope::analyzer {

namespace {

// What one database contributes, merged in database order afterwards.
struct DatabaseShare {
  std::map<std::string, WorkflowWaste> by_name;
  std::map<std::string, std::set<std::pair<std::string, int64_t>>> captures_of;  // (db, capture)
  std::map<std::string, std::map<std::string, int64_t>> rule_impact;
  std::map<std::string, std::vector<int64_t>> step_durations;  // name -> iteration durations
  std::vector<CaptureWithoutGpu> without_gpu;
};

// The capture holds no GPU interval: it is listed, once per job of its processes.
void add_capture_without_gpu(const std::string& path, const store::Capture& capture,
                             const CaptureData& context, DatabaseShare& share) {
  std::set<int64_t> workflows;
  for (const auto& p : context.processes)
    workflows.insert(workflow_of_process(context, p.globalPid));
  if (workflows.empty()) workflows.insert(workflow_of_process(context, -1));
  for (int64_t id : workflows) {
    const WorkflowInfo info = workflow_info(context, id);
    share.without_gpu.push_back({info.name, info.user, path, capture.id});
  }
}

void add_capture(const store::Reader& reader, const std::string& path,
                 const store::Capture& capture, const std::vector<store::Process>& processes,
                 CaptureData& context, DatabaseShare& share) {
  context.capture = capture;
  context.processes = store::processes_of(processes, capture.id);  // pids repeat across captures
  // The GPU intervals (kernels, copies, memsets: start, end, device, process), all the ranking
  // needs, grouped by (workflow, device) as they are read. Rows come in runs of one process and
  // device: the group is looked up only when that changes.
  std::map<int64_t, int64_t> workflow_by_pid;
  std::map<std::pair<int64_t, int32_t>, std::vector<Interval>> groups;
  std::vector<Interval>* group = nullptr;
  int64_t group_pid = 0;
  int32_t group_device = 0;
  for (const char* table :
       {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    auto stmt =
        reader.database().prepare("SELECT start, end, deviceId, globalPid" +
                                  store::capture_rows_sql(reader.database(), table, capture.id));
    stmt.bind(1, capture.id);
    int64_t row = 0;
    while (stmt.step()) {
      ++row;
      const int64_t start = checked_time(stmt, 0, path, table, row, "start");
      const int64_t end = checked_time(stmt, 1, path, table, row, "end");
      if (end < start)
        throw InputError(
            path, std::string("table ") + table + " row " + std::to_string(row),
            "end " + std::to_string(end) + " is before start " + std::to_string(start));
      const auto device = static_cast<int32_t>(
          checked_int(stmt, 2, path, table, row, "deviceId", INT32_MIN, INT32_MAX));
      const int64_t pid = stmt.column_is_null(3) ? -1 : stmt.column_int(3);
      if (!group || pid != group_pid || device != group_device) {
        group_pid = pid, group_device = device;
        auto it = workflow_by_pid.find(pid);
        if (it == workflow_by_pid.end())
          it = workflow_by_pid.emplace(pid, workflow_of_process(context, pid)).first;
        group = &groups[{it->second, device}];
      }
      group->push_back({start, end});
    }
  }
  // The jobs' steps (iterations of their processes, and iterations of no process): the window of
  // their GPU utilization (gpu_utilization.h).
  std::map<int64_t, std::vector<Interval>> steps_of_workflow;
  std::vector<Interval> unattributed_steps;
  {
    auto stmt = reader.database().prepare(
        "SELECT start, end, globalPid FROM iterations WHERE captureId = ?1");
    stmt.bind(1, capture.id);
    int64_t row = 0;
    while (stmt.step()) {
      ++row;
      const Interval step{checked_time(stmt, 0, path, "iterations", row, "start"),
                          checked_time(stmt, 1, path, "iterations", row, "end")};
      if (stmt.column_is_null(2)) {
        unattributed_steps.push_back(step);
        continue;
      }
      const int64_t pid = stmt.column_int(2);
      auto it = workflow_by_pid.find(pid);
      if (it == workflow_by_pid.end())
        it = workflow_by_pid.emplace(pid, workflow_of_process(context, pid)).first;
      steps_of_workflow[it->second].push_back(step);
    }
  }
  context.iterations = reader.iterations(capture.id);
  for (auto& [name, durations] : step_durations_by_workflow(context)) {
    auto& all = share.step_durations[name];
    all.insert(all.end(), durations.begin(), durations.end());
  }
  if (groups.empty()) {
    add_capture_without_gpu(path, capture, context, share);
    return;
  }
  std::set<std::string> names_in_capture;
  for (auto& [key, spans] : groups) {
    const auto by_begin = [](const Interval& a, const Interval& b) { return a.begin < b.begin; };
    if (!std::is_sorted(spans.begin(), spans.end(), by_begin))
      std::sort(spans.begin(), spans.end(), by_begin);
    WorkflowInfo info = workflow_info(context, key.first);
    WorkflowWaste& w = share.by_name[info.name];
    w.workflow = info.name;
    if (w.user.empty()) w.user = info.user;
    int64_t last = INT64_MIN;
    for (const Interval& x : spans) last = std::max(last, x.end);
    std::vector<Interval> steps = steps_of_workflow[key.first];
    steps.insert(steps.end(), unattributed_steps.begin(), unattributed_steps.end());
    const GpuUtilization u = measure_gpu_utilization(
        unite_sorted(spans), {spans.front().begin, last}, steps_span(steps));
    w.span_ns += u.window.length();
    w.busy_ns += u.busy_ns;
    w.idle_ns += u.window.length() - u.busy_ns;
    ++w.devices;
    share.captures_of[info.name].insert({path, capture.id});
    names_in_capture.insert(info.name);
  }
  // Findings are per capture; credit them to the capture's jobs (split evenly). They follow the
  // one rule for stored vs fresh findings (capture_findings(), analysis.h), as `analyze` and
  // `report` do: the analysis cached under the capture's current key when `analyze` or the
  // daemon stored one, else the capture is loaded (what the rules read) and analysed now.
  if (names_in_capture.empty()) return;
  const AnalysisResult analysis = capture_findings(reader, capture.id);
  for (const auto& f : analysis.findings) {
    const int64_t share_ns = f.impact_ns / static_cast<int64_t>(names_in_capture.size());
    for (const auto& name : names_in_capture) {
      share.by_name[name].findings_impact_ns += share_ns;
      share.rule_impact[name][f.rule] += share_ns;
    }
  }
}

DatabaseShare rank_database(const store::Reader& reader, const std::string& path,
                            const common::CaptureChoice& captures) {
  DatabaseShare share;
  CaptureData context;  // what workflow attribution reads: processes, workflows, the capture
  const auto processes = reader.processes();
  context.workflows = reader.workflows();
  for (const auto& capture : reader.captures())
    if (!captures.id || capture.id == *captures.id)
      add_capture(reader, path, capture, processes, context, share);
  return share;
}

}  // namespace

std::vector<WorkflowWaste> rank_workflows(const std::vector<std::string>& database_paths,
                                          const FleetProgress& progress,
                                          const common::CaptureChoice& captures,
                                          std::vector<CaptureWithoutGpu>* without_gpu) {
  return rank_sources(
      database_paths,
      [&](size_t d) {
        // Anything open_input opens; an imported trace lives in memory as long as its input.
        struct Held {
          importers::OpenedInput input;
          store::Reader reader;
        };
        auto input = importers::open_input(database_paths[d]);
        store::Reader reader = input.reader();
        auto held = std::make_shared<Held>(Held{std::move(input), std::move(reader)});
        return std::shared_ptr<const store::Reader>(held, &held->reader);
      },
      progress, captures, without_gpu);
}

std::vector<WorkflowWaste> rank_sources(const std::vector<std::string>& database_paths,
                                        const ReaderFactory& open, const FleetProgress& progress,
                                        const common::CaptureChoice& captures,
                                        std::vector<CaptureWithoutGpu>* without_gpu) {
  // Databases are independent: read on every core, merged in the order given.
  std::vector<DatabaseShare> shares(database_paths.size());
  std::vector<std::exception_ptr> errors(database_paths.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  size_t finished = 0;
  auto work = [&] {
    for (size_t d; (d = next.fetch_add(1)) < database_paths.size();) {
      try {
        shares[d] = rank_database(*open(d), database_paths[d], captures);
      } catch (...) {
        errors[d] = std::current_exception();
      }
      std::lock_guard lock(progress_mu);
      if (progress) progress(database_paths[d], finished++, database_paths.size());
    }
  };
  const size_t threads = std::min<size_t>(
      database_paths.size(), std::max<unsigned>(1, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    // A thread the process may not have (its stack refused by the memory budget or RLIMIT_NPROC)
    // leaves the work to the ones started: they take the databases in turn.
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first failing database in the order given

  std::map<std::string, WorkflowWaste> by_name;
  std::map<std::string, std::set<std::pair<std::string, int64_t>>> captures_of;
  std::map<std::string, std::map<std::string, int64_t>> rule_impact;
  std::map<std::string, std::vector<int64_t>> step_durations;
  for (DatabaseShare& share : shares) {
    if (without_gpu)
      without_gpu->insert(without_gpu->end(), share.without_gpu.begin(), share.without_gpu.end());
    for (auto& [name, durations] : share.step_durations) {
      auto& all = step_durations[name];
      all.insert(all.end(), durations.begin(), durations.end());
    }
    for (auto& [name, w] : share.by_name) {
      WorkflowWaste& total = by_name[name];
      total.workflow = name;
      if (total.user.empty()) total.user = w.user;
      total.span_ns += w.span_ns, total.busy_ns += w.busy_ns, total.idle_ns += w.idle_ns;
      total.devices += w.devices;
      total.findings_impact_ns += w.findings_impact_ns;
    }
    for (auto& [name, set] : share.captures_of) captures_of[name].insert(set.begin(), set.end());
    for (auto& [name, rules] : share.rule_impact)
      for (auto& [rule, impact] : rules) rule_impact[name][rule] += impact;
  }
  std::vector<WorkflowWaste> out;
  for (auto& [name, w] : by_name) {
    w.captures = static_cast<int64_t>(captures_of[name].size());
    w.capture_refs.assign(captures_of[name].begin(), captures_of[name].end());
    w.steps = step_stats(step_durations[name]);
    int64_t best = -1;
    for (const auto& [rule, impact] : rule_impact[name])
      if (impact > best) best = impact, w.top_rule = rule, w.top_rule_impact_ns = impact;
    out.push_back(w);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.idle_ns != b.idle_ns ? a.idle_ns > b.idle_ns : a.workflow < b.workflow;
  });
  return out;
}

}  // namespace fleetscope::analyzer
