// `fleetscope share status|apply|off|auto` and `fleetscope run --share`: the sharing service of
// the host daemon (schema/fleetscope.thrift, API version 3) seen from the command line.
#include "fleetscope/cli/share_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include <thrift/transport/TTransportException.h>

#include "FleetscopeHost.h"
#include "fleetscope/agent_link/process_facts.h"
#include "fleetscope/cli/daemon_commands.h"
#include "fleetscope/cli/integrations.h"
#include "fleetscope/common/args.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/lanes/lane_environment.h"
#include "fleetscope/launcher/child_process.h"
#include "fleetscope/launcher/run_command.h"
#include "fleetscope/rpc/host_client.h"
#include "fleetscope/sharer/host_planning.h"
#include "fleetscope/sharer/planner.h"

namespace fleetscope::cli {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string default_socket() {
  const char* env = std::getenv("FLEETSCOPE_SOCKET");
  return env && *env ? env : kDefaultDaemonSocket;
}

template <class Body>
int with_daemon(const std::string& socket, std::ostream& err, Body&& body) {
  try {
    rpc::HostConnection daemon(socket);
    return body(daemon);
  } catch (const rpc::InvalidRequest& e) {
    err << "error: " << e.message << "\n";
  } catch (const rpc::NotFound& e) {
    err << "error: " << e.message << "\n";
  } catch (const rpc::PermissionDenied& e) {
    err << "error: permission denied: " << e.message << "\n";
  } catch (const apache::thrift::transport::TTransportException& e) {
    err << "error: cannot reach fleetscoped at " << socket << ": " << e.what()
        << " (is the daemon running? see `systemctl status fleetscoped`)\n";
  } catch (const apache::thrift::TApplicationException& e) {
    err << "error: the daemon at " << socket << " has no sharing service (" << e.what()
        << "): it predates API version 3\n";
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
  }
  return 1;
}

bool check_format(const std::string& format, std::ostream& err) {
  if (format == "table" || format == "json") return true;
  err << "error: --format must be table or json\n";
  return false;
}

std::string gib(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1024.0 * 1024 * 1024)
     << " GiB";
  return os.str();
}

const char* state_name(rpc::LaneState::type state) {
  switch (state) {
    case rpc::LaneState::GRANTED:
      return "granted";
    case rpc::LaneState::QUEUED:
      return "queued";
    case rpc::LaneState::UNSHARED:
      return "unshared";
  }
  return "unknown";
}

json job_json(const rpc::SharedJob& job) {
  json j = {{"pid", job.pid},
            {"uid", job.uid},
            {"workflow", job.workflow},
            {"persistent_bytes", job.persistent_bytes},
            {"ephemeral_bytes", job.ephemeral_bytes},
            {"granted_ns", job.granted_ns}};
  if (job.__isset.plan_id) j["plan_id"] = job.plan_id;
  if (job.__isset.measured_slowdown) j["measured_slowdown"] = job.measured_slowdown;
  if (job.__isset.iterations_seen) j["iterations"] = job.iterations_seen;
  if (job.__isset.denied_allocations) j["denied_allocations"] = job.denied_allocations;
  return j;
}

json status_json(const rpc::ShareStatus& s) {
  json gpus = json::array(), lanes = json::array(), queued = json::array(), plans = json::array(),
       events = json::array();
  for (const auto& g : s.gpus)
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"capacity_bytes", g.capacity_bytes},
                    {"free_bytes", g.free_bytes}});
  for (const auto& l : s.lanes) {
    json jobs = json::array();
    for (const auto& job : l.jobs) jobs.push_back(job_json(job));
    lanes.push_back({{"gpu_index", l.gpu_index},
                     {"gpu_uuid", l.gpu_uuid},
                     {"lane_id", l.lane_id},
                     {"offset_bytes", l.offset_bytes},
                     {"capacity_bytes", l.capacity_bytes},
                     {"policy", l.policy},
                     {"jobs", jobs}});
    if (l.__isset.used_bytes) lanes.back()["used_bytes"] = l.used_bytes;
    if (l.__isset.peak_used_bytes) lanes.back()["peak_used_bytes"] = l.peak_used_bytes;
    if (l.__isset.denied_allocations) lanes.back()["denied_allocations"] = l.denied_allocations;
  }
  for (const auto& q : s.queued) queued.push_back({{"pid", q.pid}, {"uid", q.uid}});
  for (const auto& p : s.plans) {
    json j = {{"plan_id", p.plan_id}, {"created_ns", p.created_ns}, {"policy", p.policy},
              {"active", p.active},   {"automatic", p.automatic},   {"workflows", p.workflows}};
    if (p.__isset.max_slowdown) j["max_slowdown"] = p.max_slowdown;
    if (p.__isset.withdrawn_reason) j["withdrawn_reason"] = p.withdrawn_reason;
    plans.push_back(j);
  }
  for (const auto& e : s.events) {
    json j = {{"ts_ns", e.ts_ns}, {"kind", e.kind}};
    if (e.__isset.plan_id) j["plan_id"] = e.plan_id;
    j["detail"] = json::parse(e.detail_json, nullptr, false);
    events.push_back(j);
  }
  json doc = {{"enabled", s.enabled}, {"automatic", s.automatic}, {"gpus", gpus},
              {"lanes", lanes},       {"queued", queued},         {"plans", plans},
              {"events", events}};
  if (s.__isset.max_slowdown) doc["max_slowdown"] = s.max_slowdown;
  if (s.__isset.gate_socket) doc["gate_socket"] = s.gate_socket;
  if (s.__isset.stray_ledgers) doc["stray_ledgers"] = s.stray_ledgers;
  return doc;
}

void print_status_table(const rpc::ShareStatus& s, std::ostream& out) {
  out << "sharing: " << (s.enabled ? "on" : "off");
  if (s.automatic) out << ", automatic (max slowdown " << s.max_slowdown << ")";
  out << "\n\nGPUS\n";
  for (const auto& g : s.gpus)
    out << "  " << g.index << "  " << std::left << std::setw(42) << g.uuid << gib(g.capacity_bytes)
        << ", " << gib(g.free_bytes) << " free\n";
  if (s.gpus.empty()) out << "  (none: the daemon sees no GPU)\n";
  out << "\nLANES\n";
  for (const auto& l : s.lanes) {
    out << "  " << std::left << std::setw(28) << l.lane_id << "GPU " << l.gpu_index << "  "
        << gib(l.capacity_bytes) << "  " << l.policy;
    if (l.__isset.used_bytes)
      out << "  used " << gib(l.used_bytes) << ", peak " << gib(l.peak_used_bytes);
    if (l.__isset.denied_allocations && l.denied_allocations > 0)
      out << "  " << l.denied_allocations << " allocation(s) refused (lane full)";
    out << "\n";
    for (const auto& job : l.jobs) {
      out << "      pid " << job.pid << "  " << text::terminal_safe(job.workflow) << "  P "
          << gib(job.persistent_bytes) << " T " << gib(job.ephemeral_bytes);
      if (job.__isset.plan_id) out << "  plan " << job.plan_id;
      if (job.__isset.measured_slowdown)
        out << "  slowdown " << std::fixed << std::setprecision(2) << job.measured_slowdown;
      if (job.__isset.denied_allocations && job.denied_allocations > 0)
        out << "  denied " << job.denied_allocations;
      out << "\n";
    }
  }
  if (s.lanes.empty()) out << "  (none)\n";
  if (!s.queued.empty()) {
    out << "\nQUEUED\n";
    for (const auto& q : s.queued) out << "  pid " << q.pid << " (uid " << q.uid << ")\n";
  }
  out << "\nPLANS (lane_plans)\n";
  for (const auto& p : s.plans) {
    out << "  " << p.plan_id << "  " << (p.active ? "active" : "inactive")
        << (p.automatic ? ", automatic" : "") << "  " << p.policy << "  ";
    for (size_t i = 0; i < p.workflows.size(); ++i)
      out << (i ? "," : "") << text::terminal_safe(p.workflows[i]);
    if (p.__isset.withdrawn_reason) out << "  (" << p.withdrawn_reason << ")";
    out << "\n";
  }
  if (s.plans.empty()) out << "  (none)\n";
  out << "\nEVENTS (sharing_events, latest last)\n";
  for (const auto& e : s.events) {
    out << "  " << e.ts_ns << "  " << std::left << std::setw(16) << e.kind;
    if (e.__isset.plan_id) out << " plan " << e.plan_id;
    out << "  " << text::terminal_safe(e.detail_json) << "\n";
  }
  if (s.events.empty()) out << "  (none)\n";
  if (s.__isset.stray_ledgers && !s.stray_ledgers.empty()) {
    out << "\nSTRAY LEDGERS (no lane of this daemon; `fleetscope share ledgers --remove`)\n";
    for (const auto& path : s.stray_ledgers) out << "  " << path << "\n";
  }
}

std::optional<std::string> read_file(const std::string& path, std::string& error) {
  // A FIFO is named, not read (its read waited for a writer for ever); a directory read as an
  // empty plan.
  const std::string expected = "a plan (`fleetscope share plan --format json`)";
  if (auto problem = common::input_problem(path, expected)) {
    error = common::cannot_read(path, *problem);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = common::cannot_read(path, std::strerror(errno));
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int64_t> bytes_option(const std::string& text, const char* name, std::ostream& err) {
  if (text.empty()) return std::nullopt;
  auto parsed = lanes::parse_byte_size(text);
  if (!parsed || *parsed > static_cast<uint64_t>(INT64_MAX)) {
    err << "error: " << name << " '" << text << "': expected a byte count such as 6GiB\n";
    return std::optional<int64_t>(-1);
  }
  return static_cast<int64_t>(*parsed);
}

}  // namespace

std::optional<std::string> find_lanes_library(std::string& searched) {
  constexpr const char* kName = "libfleetscope_lanes.so";
  if (const char* env = std::getenv("FLEETSCOPE_LANES_LIBRARY"); env && *env) {
    searched = env;
    if (fs::exists(env)) return fs::absolute(env).string();
    return std::nullopt;
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path prefix = exe.parent_path().parent_path();
  for (const fs::path& candidate :
       {exe.parent_path() / kName, prefix / "lib" / kName, prefix / "lib" / "fleetscope" / kName}) {
    searched += (searched.empty() ? "" : ", ") + candidate.string();
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

int run_share_status_command(const std::vector<std::string>& args, std::ostream& out,
                             std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  common::ArgParser parser(
      "fleetscope share status [--socket PATH] [--format table|json]",
      "The daemon's sharing service: GPUs, live lanes and their jobs (with the measured slowdown "
      "of planned jobs), queued requests, plans (lane_plans) and the latest decisions "
      "(sharing_events).");
  parser.option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    rpc::ShareStatus status;
    daemon->shareStatus(status);
    if (format == "json")
      out << status_json(status).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    else
      print_status_table(status, out);
    return 0;
  });
}

int run_share_apply_command(const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err) {
  // Empty: the policy the plan was made for (share plan --policy; a plan without one: fifo).
  std::string socket = default_socket(), format = "table", policy;
  double max_slowdown = 0;
  bool automatic = false;
  std::vector<std::string> plan_files;
  common::ArgParser parser(
      "fleetscope share apply [PLAN.json] [--auto] [--max-slowdown X] [--policy fifo|srtf|priority]"
      " [--socket PATH] [--format table|json]",
      "Sends a plan (the JSON `fleetscope share plan --format json` writes) to the daemon, which "
      "records it in lane_plans and places new and restarted jobs of the workflows it names in "
      "its lanes (jobs started with `fleetscope run --share` or `--share-if-planned`). --auto "
      "keeps measuring their iteration time and withdraws the plan when a job's slowdown "
      "exceeds --max-slowdown; without PLAN.json, --auto plans from the daemon's own host "
      "database (the analyzer's consolidation candidates).");
  parser.positionals("PLAN.json", "plan to apply", &plan_files, 0, 1)
      .flag("--auto", "automatic mode: measure and withdraw", &automatic)
      .option("--max-slowdown", "X", "slowdown bound of automatic mode (default 1.2)",
              &max_slowdown)
      .option("--policy", "NAME",
              "turn policy of the plan's lanes: the one the plan was made for (share plan "
              "--policy; default fifo); another one is refused, its slowdowns were predicted for "
              "that policy",
              &policy)
      .option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  if (plan_files.empty() && !automatic) {
    err << "error: give PLAN.json (from `fleetscope share plan --format json`), or --auto\n";
    return 2;
  }
  if (!policy.empty() && !sharer::turn_order_named(policy)) {
    err << "error: --policy expects fifo|srtf|priority, got '" << policy << "'\n";
    return 2;
  }
  if (max_slowdown == 0) max_slowdown = automatic ? sharer::PlannerOptions{}.max_slowdown : 0;
  if (max_slowdown != 0 && !(max_slowdown >= 1.0 && max_slowdown <= 1e6)) {
    err << "error: --max-slowdown must be in [1, 1e6]\n";
    return 2;
  }
  std::string plan_json;
  if (!plan_files.empty()) {
    std::string error;
    auto text = read_file(plan_files[0], error);
    if (!text) {
      err << "error: " << error << "\n";
      return 1;
    }
    plan_json = *text;
    // The lanes must take turns by the policy the plan's slowdowns were predicted for.
    const json document = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
    if (!document.is_discarded()) {  // not JSON: the daemon names the problem
      sharer::TurnOrder planned = sharer::TurnOrder::kFifo;
      try {
        planned = sharer::plan_turn_order(document, plan_files[0]);
      } catch (const std::exception& error) {
        err << "error: " << error.what() << "\n";
        return 1;
      }
      const std::string planned_name = sharer::turn_order_name(planned);
      if (!policy.empty() && policy != planned_name) {
        err << "error: " << plan_files[0] << " was planned for turn policy " << planned_name
            << " (its predicted slowdowns assume it); --policy " << policy
            << " would run its lanes by another: plan again with `fleetscope share plan --policy "
            << policy << "`, or leave --policy out\n";
        return 1;
      }
      policy = planned_name;
    }
  }
  if (policy.empty()) policy = "fifo";
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    if (plan_json.empty()) {
      // The analyzer's current plan: consolidation candidates of the daemon's host database.
      rpc::DaemonStatus status;
      daemon->status(status);
      // The host's planning settings, as `share plan` uses them.
      sharer::PlannerOptions options = sharer::host_planning().options;
      options.max_slowdown = max_slowdown;
      options.turn_order = *sharer::turn_order_named(policy);  // checked above
      const auto candidates = candidates_from_databases({status.database_path}, options.memory);
      auto plan = sharer::plan_consolidation(candidates.jobs, options);
      plan_json = sharer::plan_to_json(plan).dump();
      err << "share apply: planned " << candidates.jobs.size() << " candidate job(s) of "
          << status.database_path << "\n";
      for (const auto& why : candidates.skipped) err << "share apply: not planned: " << why << "\n";
    }
    rpc::ApplyPlanRequest request;
    request.plan_json = plan_json;
    request.__set_automatic(automatic);
    if (max_slowdown > 0) request.__set_max_slowdown(max_slowdown);
    request.__set_policy(policy);
    rpc::PlanApplied applied;
    daemon->applyPlan(applied, request);
    if (format == "json") {
      json doc = {
          {"plan_id", applied.plan_id}, {"workflows", applied.workflows}, {"automatic", automatic}};
      if (automatic) doc["max_slowdown"] = max_slowdown;
      if (applied.__isset.superseded_plan_id)
        doc["superseded_plan_id"] = applied.superseded_plan_id;
      out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    } else {
      out << "plan " << applied.plan_id << " applied" << (automatic ? " (automatic)" : "")
          << ": new and restarted jobs of";
      for (const auto& w : applied.workflows) out << " " << w;
      out << " go to its lanes\n";
      if (applied.__isset.superseded_plan_id)
        out << "plan " << applied.superseded_plan_id << " is no longer applied\n";
    }
    return 0;
  });
}

int run_share_off_command(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  common::ArgParser parser("fleetscope share off [--socket PATH] [--format table|json]",
                           "Stops sharing: new jobs run unshared, queued ones are told to run "
                           "unshared, lanes of running jobs are released as the jobs end.");
  parser.option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    daemon->sharingOff();
    if (format == "json")
      out << json{{"sharing", "off"}}.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    else
      out << "sharing is off: new jobs run unshared; running jobs keep their lanes until they "
             "end\n";
    return 0;
  });
}

int run_share_on_command(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  common::ArgParser parser("fleetscope share on [--socket PATH] [--format table|json]",
                           "Sharing back on after `share off`: jobs asking for a lane get one "
                           "again, and the plan `share off` stopped applies again.");
  parser.option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    daemon->sharingOn();
    if (format == "json")
      out << json{{"sharing", "on"}}.dump(2) << "\n";
    else
      out << "sharing is on\n";
    return 0;
  });
}

int run_share_ledgers_command(const std::vector<std::string>& args, std::ostream& out,
                              std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  bool remove = false;
  common::ArgParser parser(
      "fleetscope share ledgers [--remove] [--socket PATH] [--format table|json]",
      "Lane ledger files that no lane of the daemon owns (left by a crash, or made by a job that "
      "named its own lane); --remove deletes them.");
  parser.flag("--remove", "delete the stray ledgers", &remove)
      .option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    std::vector<std::string> paths;
    if (remove) {
      daemon->removeStrayLedgers(paths);
    } else {
      rpc::ShareStatus status;
      daemon->shareStatus(status);
      paths = status.stray_ledgers;
    }
    if (format == "json") {
      out << json{{remove ? "removed" : "stray_ledgers", paths}}.dump(2) << "\n";
      return 0;
    }
    if (paths.empty()) out << (remove ? "no stray ledger to remove\n" : "no stray ledger\n");
    for (const auto& path : paths) out << (remove ? "removed " : "") << path << "\n";
    return 0;
  });
}

int run_share_auto_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  double max_slowdown = sharer::PlannerOptions{}.max_slowdown;
  std::vector<std::string> mode;
  common::ArgParser parser(
      "fleetscope share auto on|off [--max-slowdown X] [--socket PATH] [--format table|json]",
      "Automatic mode on the active plan: the daemon measures each planned job's iteration time "
      "in its lane and withdraws the plan when a slowdown exceeds --max-slowdown (default 1.2).");
  parser.positionals("on|off", "switch", &mode, 1, 1)
      .option("--max-slowdown", "X", "slowdown bound", &max_slowdown)
      .option("--socket", "PATH", "daemon API socket (or 127.0.0.1:PORT)", &socket)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  if (mode[0] != "on" && mode[0] != "off") {
    err << "error: expected on or off, got '" << mode[0] << "'\n";
    return 2;
  }
  if (!(max_slowdown >= 1.0 && max_slowdown <= 1e6)) {
    err << "error: --max-slowdown must be in [1, 1e6]\n";
    return 2;
  }
  const bool on = mode[0] == "on";
  return with_daemon(socket, err, [&](rpc::HostConnection& daemon) {
    daemon->setAutomatic(on, max_slowdown);
    if (format == "json")
      out << json{{"automatic", on}, {"max_slowdown", max_slowdown}}.dump(
                 2, ' ', false, json::error_handler_t::replace)
          << "\n";
    else
      out << "automatic mode " << (on ? "on" : "off") << "\n";
    return 0;
  });
}

int run_shared_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                       const launcher::InfoPrinter& print_info) {
  // Our flags come out; whatever else is left before `--` goes to the launcher (tracing).
  std::string socket = default_socket(), workflow, persistent, ephemeral, gpu;
  int64_t priority = 0;
  bool share = false, planned_only = false;
  std::vector<std::string> launcher_args, command;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& arg = args[i];
    auto value = [&](std::string& target) {
      if (i + 1 >= args.size() || args[i + 1] == "--") return false;
      target = args[++i];
      return true;
    };
    std::string priority_text;
    if (arg == "--share") {
      share = true;
    } else if (arg == "--share-if-planned") {
      share = planned_only = true;
    } else if (arg == "--workflow" || arg == "--persistent" || arg == "--ephemeral" ||
               arg == "--gpu" || arg == "--socket" || arg == "--priority") {
      std::string& target = arg == "--workflow"     ? workflow
                            : arg == "--persistent" ? persistent
                            : arg == "--ephemeral"  ? ephemeral
                            : arg == "--gpu"        ? gpu
                            : arg == "--socket"     ? socket
                                                    : priority_text;
      if (!value(target)) {
        err << "error: " << arg << " needs a value\n";
        return 2;
      }
      if (arg == "--priority") {
        char* end = nullptr;
        priority = std::strtoll(priority_text.c_str(), &end, 10);
        if (*end || priority_text.empty() || priority < -1000000 || priority > 1000000) {
          err << "error: --priority '" << priority_text << "': expected an integer\n";
          return 2;
        }
      }
    } else {
      launcher_args.push_back(arg);
    }
  }
  if (i < args.size()) command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  const char* usage =
      "usage: fleetscope run --share|--share-if-planned [--workflow NAME] [--persistent BYTES]"
      " [--ephemeral BYTES] [--gpu UUID|INDEX] [--priority N] [--socket PATH] [RUN FLAGS] "
      "-- CMD ARGS...\n";
  if (std::find(launcher_args.begin(), launcher_args.end(), "--help") != launcher_args.end()) {
    out << usage
        << "\nAsks the host daemon for a GPU memory lane and runs CMD in it: "
           "libfleetscope_lanes.so\n"
           "preloaded (the lane's memory cap, its iteration gate), CUDA_VISIBLE_DEVICES set to "
           "the\n"
           "lane's GPU. --share: any lane (P and T from --persistent/--ephemeral, or from the "
           "active\n"
           "plan when it names the workflow); --share-if-planned: only when an active plan names "
           "the\n"
           "workflow. Queued: waits with a printed line. No daemon, sharing off, or no plan: CMD "
           "runs\n"
           "unshared, with a line saying why. RUN FLAGS (--iterations, -o ...) trace it as well.\n";
    return 0;
  }
  if (!share || command.empty()) {
    err << usage;
    return 2;
  }
  auto p_bytes = bytes_option(persistent, "--persistent", err);
  auto t_bytes = bytes_option(ephemeral, "--ephemeral", err);
  if ((p_bytes && *p_bytes < 0) || (t_bytes && *t_bytes < 0)) return 2;
  if (workflow.empty()) {
    // The same identity the agent registers with (FLEETSCOPE_WORKFLOW, Slurm, Kubernetes, command).
    std::ifstream cgroup("/proc/self/cgroup");
    std::string cgroup_text((std::istreambuf_iterator<char>(cgroup)),
                            std::istreambuf_iterator<char>());
    workflow = agent_link::detect_workflow(
                   [](const std::string& name) -> std::optional<std::string> {
                     const char* value = std::getenv(name.c_str());
                     return value ? std::optional<std::string>(value) : std::nullopt;
                   },
                   cgroup_text, command)
                   .name;
  }
  std::vector<std::pair<std::string, std::string>> environment{{"FLEETSCOPE_WORKFLOW", workflow}};
  auto run = [&]() {
    if (!launcher_args.empty()) {
      // Traced as well: the launcher's child inherits this process's environment.
      for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<std::string> forwarded = launcher_args;
      forwarded.push_back("--");
      forwarded.insert(forwarded.end(), command.begin(), command.end());
      return launcher::run_run_command(forwarded, out, err, print_info);
    }
    std::string error;
    int code = launcher::run_child(command, environment, error);
    if (!error.empty()) err << "fleetscope run: " << error << "\n";
    return code;
  };

  std::string searched;
  auto library = find_lanes_library(searched);
  if (!library) {
    err << "fleetscope run: cannot find libfleetscope_lanes.so (looked at " << searched
        << "; set FLEETSCOPE_LANES_LIBRARY)\n";
    return 1;
  }
  std::unique_ptr<rpc::HostConnection> daemon;
  rpc::LaneGrant grant;
  bool reached = false;  // the daemon answered once (a later transport error: it went away)
  try {
    daemon = std::make_unique<rpc::HostConnection>(socket);
    reached = true;
    rpc::LaneRequest request;
    request.pid = 0;  // this process: the lane lives as long as `fleetscope run` does
    request.workflow = workflow;
    if (p_bytes) request.__set_persistent_bytes(*p_bytes);
    if (t_bytes) request.__set_ephemeral_bytes(*t_bytes);
    if (!gpu.empty()) request.__set_gpu(gpu);
    request.__set_planned_only(planned_only);
    if (priority != 0) request.__set_priority(static_cast<int32_t>(priority));
    (*daemon)->requestLane(grant, request);
    if (grant.state == rpc::LaneState::QUEUED) {
      err << "fleetscope run: queued for a lane (" << grant.reason << "); waiting\n";
      while (grant.state == rpc::LaneState::QUEUED) {
        const int64_t id = grant.request_id;
        (*daemon)->awaitLane(grant, id, 30'000);
      }
    }
  } catch (const apache::thrift::transport::TTransportException&) {
    // One line, not Thrift's transport text (e.g. "TSocket::write_partial() ... Broken pipe").
    if (reached)
      err << "fleetscope run: the daemon at " << socket
          << " went away (stopped or restarted) before granting a lane: running unshared\n";
    else
      err << "fleetscope run: no daemon at " << socket << ": running unshared\n";
    return run();
  } catch (const apache::thrift::TApplicationException& e) {
    err << "fleetscope run: the daemon at " << socket
        << " has no sharing service: running unshared\n";
    return run();
  } catch (const rpc::InvalidRequest& e) {
    err << "error: " << e.message << "\n";
    return 1;
  } catch (const rpc::PermissionDenied& e) {
    err << "error: permission denied: " << e.message << "\n";
    return 1;
  } catch (const rpc::NotFound& e) {
    err << "error: " << e.message << "\n";
    return 1;
  }
  if (grant.state != rpc::LaneState::GRANTED) {
    err << "fleetscope run: " << state_name(grant.state) << ": " << grant.reason
        << "; running unshared\n";
    return run();
  }
  lanes::LaneAssignment assignment;
  assignment.lane_id = grant.lane_id;
  assignment.lane_bytes = static_cast<uint64_t>(grant.lane_bytes);
  assignment.ledger_directory = grant.ledger_directory;
  assignment.gpu_uuid = grant.gpu_uuid;
  if (grant.__isset.gate_socket) assignment.gate_socket = grant.gate_socket;
  if (grant.__isset.lane_token) assignment.token = grant.lane_token;
  assignment.priority = static_cast<int>(priority);
  const char* preload = std::getenv("LD_PRELOAD");
  for (auto& variable :
       lanes::interposition_environment(assignment, *library, preload ? preload : ""))
    environment.push_back(std::move(variable));
  // NVTX step ranges are iteration boundaries too: the library is the job's NVTX tool unless one
  // is named already (it then chains to it; see docs/sharer.md).
  if (const char* nvtx = std::getenv("NVTX_INJECTION64_PATH"); !nvtx || !*nvtx)
    environment.emplace_back("NVTX_INJECTION64_PATH", *library);
  // The lane is on one GPU: the job sees only that one (its ordinal 0).
  if (!grant.gpu_uuid.empty()) environment.emplace_back("CUDA_VISIBLE_DEVICES", grant.gpu_uuid);
  err << "fleetscope run: lane " << grant.lane_id << " on GPU " << grant.gpu_index << " ("
      << grant.gpu_uuid << "), " << gib(grant.lane_bytes) << " cap, " << grant.policy << " turns"
      << (grant.__isset.plan_id ? ", plan " + std::to_string(grant.plan_id) : std::string())
      << "\n";
  const int code = run();
  try {
    (*daemon)->releaseLane(static_cast<int32_t>(::getpid()));
  } catch (const std::exception&) {
    // The daemon reclaims the lane when this process exits anyway.
  }
  return code;
}

bool wants_share(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (arg == "--") return false;
    if (arg == "--share" || arg == "--share-if-planned") return true;
  }
  return false;
}

}  // namespace fleetscope::cli
