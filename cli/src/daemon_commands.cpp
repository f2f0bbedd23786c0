#include "fleetscope/cli/daemon_commands.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include <thrift/transport/TTransport.h>
#include <thrift/transport/TTransportException.h>

#include "FleetscopeHost.h"
#include "fleetscope/common/args.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/rpc/host_client.h"
#include "fleetscope/rpc/transport.h"

namespace fleetscope::cli {
namespace {

using json = nlohmann::json;
// Strings an agent or a file supplied, before a terminal sees them (untrusted_text.h).
using text::terminal_safe;

std::string default_socket() {
  const char* env = std::getenv("FLEETSCOPE_SOCKET");
  return env && *env ? env : kDefaultDaemonSocket;
}

// TLS client files from the environment (FLEETSCOPE_TLS_CERT, FLEETSCOPE_TLS_KEY,
// FLEETSCOPE_TLS_CA); the --tls-* flags win.
rpc::TlsClientFiles default_tls() {
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return {env("FLEETSCOPE_TLS_CERT"), env("FLEETSCOPE_TLS_KEY"), env("FLEETSCOPE_TLS_CA")};
}

using Connection = rpc::HostConnection;

// Runs `body` against the daemon; the daemon's refusals and an unreachable daemon become one
// clear line on stderr and exit code 1.
template <class Body>
int with_daemon(const std::string& socket, const rpc::TlsClientFiles& tls, std::ostream& err,
                Body&& body) {
  // Over TLS, OpenSSL writes with write(2): a daemon that refuses the certificate and hangs up
  // must give an error line, not a silent SIGPIPE death (Thrift leaves this to the program).
  if (tls.enabled()) signal(SIGPIPE, SIG_IGN);
  // A TLS file that cannot be read is named as such: OpenSSL said "SSL_CTX_use_certificate_chain_
  // file: SSL error # 2147483650; system lib" and the hint blamed the daemon's trust.
  for (const auto& [path, what] : {std::pair{tls.cert, "a PEM client certificate (--tls-cert)"},
                                   std::pair{tls.key, "its PEM private key (--tls-key)"},
                                   std::pair{tls.ca, "a PEM CA certificate (--tls-ca)"}}) {
    if (path.empty()) continue;
    if (auto problem = common::input_problem(path, what)) {
      err << "error: " << common::cannot_read(path, *problem) << "\n";
      return 1;
    }
  }
  try {
    Connection daemon(socket, tls);
    return body(daemon);
  } catch (const rpc::InvalidRequest& e) {
    err << "error: " << e.message << "\n";
  } catch (const rpc::NotFound& e) {
    err << "error: " << e.message << "\n";
  } catch (const rpc::PermissionDenied& e) {
    err << "error: permission denied: " << e.message << "\n";
  } catch (const apache::thrift::transport::TTransportException& e) {
    err << "error: cannot reach fleetscoped at " << socket << ": " << e.what()
        << (tls.enabled() ? " (over TLS: does the daemon trust the CA of --tls-cert and map its "
                            "CN to a user, and does --tls-ca sign the daemon's certificate?)\n"
                          : " (is the daemon running? see `systemctl status fleetscoped`)\n");
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

std::string join(const std::vector<int32_t>& values) {
  std::string out;
  for (int32_t v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out.empty() ? "-" : out;
}

std::string percent(double value) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << value << "%";
  return os.str();
}

std::string gib(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1024.0 * 1024 * 1024)
     << " GiB";
  return os.str();
}

json agent_json(const rpc::AgentInfo& a) {
  json j = {{"agent_id", a.agent_id},
            {"pid", a.pid},
            {"uid", a.uid},
            {"workflow", a.workflow},
            {"workflow_source", a.workflow_source},
            {"parent_chain", a.parent_chain},
            {"devices", a.devices},
            {"registered_ns", a.registered_ns}};
  if (a.__isset.command) j["command"] = a.command;
  if (a.__isset.open_capture_id) j["open_capture_id"] = a.open_capture_id;
  return j;
}

json progress_json(const rpc::TraceProgress& p) {
  json j = {{"capture_id", p.capture_id},
            {"done", p.done},
            {"pids", p.pids},
            {"records", p.records},
            {"dropped_records", p.dropped_records},
            {"database", p.database_path}};
  if (p.__isset.note) j["note"] = p.note;
  if (p.__isset.kernels) j["kernels"] = p.kernels;
  if (p.__isset.gpu_busy_pct) j["gpu_busy_pct"] = p.gpu_busy_pct;
  if (p.__isset.top_finding) j["top_finding"] = p.top_finding;
  if (p.__isset.refused) j["refused"] = p.refused;
  return j;
}

}  // namespace

int64_t parse_age(const std::string& text) {
  size_t used = 0;
  double value = 0;
  // Decimal digits and a point only: std::stod also took ' 5s', '+5s' and hex ('0x10' was 16 s).
  const size_t number = text.find_first_not_of("0123456789.");
  if (number != 0 && text[0] != '.') {
    try {
      value = std::stod(text.substr(0, number), &used);
    } catch (...) {
      used = 0;
    }
  }
  if (used == 0 || value < 0)
    throw std::invalid_argument("'" + text +
                                "' is not an age from 0 to 36500 days like 90s, 10m, 2h or 1d");
  std::string unit = text.substr(used);
  double seconds = unit.empty() || unit == "s" ? 1
                   : unit == "m"               ? 60
                   : unit == "h"               ? 3600
                   : unit == "d"               ? 86400
                                               : -1;
  if (seconds < 0)
    throw std::invalid_argument("'" + text + "' has an unknown unit (use s, m, h or d)");
  // Bounded before the cast: 'inf', 'nan' and '99999999999999d' were cast to int64 (undefined;
  // every window was listed). 100 years covers any capture (and `now - age` cannot overflow).
  constexpr double max_days = 36500;
  const double ns = value * seconds * 1e9;
  if (!(ns <= max_days * 86400 * 1e9))
    throw std::invalid_argument("'" + text +
                                "' is not an age from 0 to 36500 days like 90s, 10m, 2h or 1d");
  return static_cast<int64_t>(ns);
}

std::optional<int64_t> since_bound(const std::string& age, int64_t now_ns) {
  const int64_t ns = parse_age(age);
  if (ns == 0) return std::nullopt;
  return now_ns - ns;
}

int run_status_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  rpc::TlsClientFiles tls = default_tls();
  common::ArgParser parser(
      "fleetscope status [--socket PATH] [--tls-cert|key|ca FILE] [--format "
      "table|json]",
      "The host daemon: version, database, registered agents (yours unless you are root), "
      "GPUs and open trace windows.");
  parser.option("--socket", "PATH", "daemon API socket (or HOST:PORT)", &socket)
      .option("--tls-cert", "FILE", "TLS client certificate (PEM) for a HOST:PORT daemon",
              &tls.cert)
      .option("--tls-key", "FILE", "private key of --tls-cert", &tls.key)
      .option("--tls-ca", "FILE", "CA certificate the daemon's certificate chains to", &tls.ca)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, tls, err, [&](Connection& daemon) {
    rpc::DaemonStatus s;
    daemon->status(s);
    if (format == "json") {
      json agents = json::array(), devices = json::array(), windows = json::array();
      for (const auto& a : s.agents) agents.push_back(agent_json(a));
      for (const auto& d : s.devices) {
        json j = {{"index", d.index}, {"name", d.name}};
        if (d.__isset.uuid) j["uuid"] = d.uuid;
        if (d.__isset.gpu_utilization_pct) j["gpu_utilization_pct"] = d.gpu_utilization_pct;
        if (d.__isset.memory_used_bytes) j["memory_used_bytes"] = d.memory_used_bytes;
        if (d.__isset.memory_total_bytes) j["memory_total_bytes"] = d.memory_total_bytes;
        if (d.__isset.power_watts) j["power_watts"] = d.power_watts;
        if (d.__isset.sm_clock_mhz) j["sm_clock_mhz"] = d.sm_clock_mhz;
        devices.push_back(j);
      }
      for (const auto& w : s.open_windows) {
        json j = {{"capture_id", w.capture_id}, {"pids", w.pids}, {"start_ns", w.start_ns}};
        if (w.__isset.deadline_ns) j["deadline_ns"] = w.deadline_ns;
        windows.push_back(j);
      }
      json doc = {{"api_version", s.version.api_version},
                  {"daemon_version", s.version.daemon_version},
                  {"hostname", s.version.hostname},
                  {"schema_version", s.version.schema_version},
                  {"started_ns", s.started_ns},
                  {"database", s.database_path},
                  {"device_sampling", s.device_sampling},
                  {"agents", agents},
                  {"devices", devices},
                  {"open_windows", windows},
                  {"caller_uid", s.caller_uid}};
      if (s.__isset.device_sampling_note) doc["device_sampling_note"] = s.device_sampling_note;
      out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      return 0;
    }
    out << "fleetscoped " << terminal_safe(s.version.daemon_version) << " on "
        << terminal_safe(s.version.hostname) << " (API " << s.version.api_version << ", schema "
        << s.version.schema_version << ")\n";
    out << "database: " << terminal_safe(s.database_path) << "\n";
    out << "device sampling: " << (s.device_sampling ? "on" : "off")
        << (s.device_sampling ? "" : " - " + terminal_safe(s.device_sampling_note)) << "\n\n";
    out << "GPUS\n"
        << std::left << std::setw(5) << "GPU" << std::setw(28) << "NAME" << std::setw(8) << "UTIL"
        << std::setw(22) << "MEMORY" << std::setw(10) << "POWER"
        << "SM CLOCK\n";
    for (const auto& d : s.devices) {
      std::ostringstream memory, power;
      if (d.__isset.memory_used_bytes)
        memory << gib(d.memory_used_bytes) << " / " << gib(d.memory_total_bytes);
      if (d.__isset.power_watts)
        power << std::fixed << std::setprecision(0) << d.power_watts << " W";
      out << std::left << std::setw(5) << d.index << std::setw(28) << terminal_safe(d.name)
          << std::setw(8) << (d.__isset.gpu_utilization_pct ? percent(d.gpu_utilization_pct) : "-")
          << std::setw(22) << memory.str() << std::setw(10) << power.str()
          << (d.__isset.sm_clock_mhz ? std::to_string(d.sm_clock_mhz) + " MHz" : "-") << "\n";
    }
    if (s.devices.empty()) out << "(none)\n";
    out << "\nAGENTS\n"
        << std::left << std::setw(9) << "PID" << std::setw(8) << "UID" << std::setw(30)
        << "WORKFLOW" << std::setw(12) << "SOURCE" << std::setw(10) << "WINDOW"
        << "COMMAND\n";
    for (const auto& a : s.agents)
      out << std::left << std::setw(9) << a.pid << std::setw(8) << a.uid << std::setw(30)
          << terminal_safe(a.workflow) << std::setw(12) << terminal_safe(a.workflow_source)
          << std::setw(10) << (a.__isset.open_capture_id ? std::to_string(a.open_capture_id) : "-")
          << terminal_safe(a.command) << "\n";
    if (s.agents.empty()) out << "(none)\n";
    out << "\nOPEN WINDOWS\n";
    for (const auto& w : s.open_windows)
      out << "capture " << w.capture_id << " on pids " << join(w.pids) << "\n";
    if (s.open_windows.empty()) out << "(none)\n";
    return 0;
  });
}

int run_jobs_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string socket = default_socket(), format = "table";
  rpc::TlsClientFiles tls = default_tls();
  common::ArgParser parser(
      "fleetscope jobs [--socket PATH] [--tls-cert|key|ca FILE] [--format "
      "table|json]",
      "Jobs (workflows) with the agent on this host: their processes and captures.");
  parser.option("--socket", "PATH", "daemon API socket (or HOST:PORT)", &socket)
      .option("--tls-cert", "FILE", "TLS client certificate (PEM) for a HOST:PORT daemon",
              &tls.cert)
      .option("--tls-key", "FILE", "private key of --tls-cert", &tls.key)
      .option("--tls-ca", "FILE", "CA certificate the daemon's certificate chains to", &tls.ca)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  return with_daemon(socket, tls, err, [&](Connection& daemon) {
    std::vector<rpc::Job> jobs;
    daemon->jobs(jobs);
    if (format == "json") {
      json list = json::array();
      for (const auto& j : jobs) {
        json agents = json::array();
        for (const auto& a : j.agents) agents.push_back(agent_json(a));
        json item = {{"workflow", j.workflow},
                     {"uids", j.uids},
                     {"agents", agents},
                     {"capture_ids", j.capture_ids}};
        if (j.__isset.workflow_id) item["workflow_id"] = j.workflow_id;
        list.push_back(item);
      }
      out << list.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      return 0;
    }
    out << std::left << std::setw(32) << "WORKFLOW" << std::setw(12) << "UIDS" << std::setw(24)
        << "PIDS"
        << "CAPTURES\n";
    for (const auto& j : jobs) {
      std::vector<int32_t> pids;
      for (const auto& a : j.agents) pids.push_back(a.pid);
      std::string captures;
      for (int64_t c : j.capture_ids) captures += (captures.empty() ? "" : ",") + std::to_string(c);
      out << std::left << std::setw(32) << terminal_safe(j.workflow) << std::setw(12)
          << join(j.uids) << std::setw(24) << join(pids) << (captures.empty() ? "-" : captures)
          << "\n";
    }
    if (jobs.empty()) out << "(no process with the fleetscope agent is registered)\n";
    return 0;
  });
}

int run_trace_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string socket = default_socket(), format = "table", workflow;
  rpc::TlsClientFiles tls = default_tls();
  int64_t pid = 0, duration_ms = 0, iterations = 0;
  bool no_wait = false;
  common::ArgParser parser(
      "fleetscope trace (--pid PID | --workflow NAME) (--duration-ms N | --iterations N) "
      "[--no-wait] "
      "[--socket PATH] [--tls-cert|key|ca FILE] [--format table|json]",
      "Traces a running job on demand (like `dyno gputrace`): every process with the agent in the "
      "tree of PID, "
      "or of the workflow, records one window; the daemon stores it in the host database and "
      "analyzes it.");
  parser.option("--pid", "PID", "process (its children are traced too)", &pid, 1)
      .option("--workflow", "NAME", "workflow (job) name, as `fleetscope jobs` shows it", &workflow)
      .option("--duration-ms", "N", "window length in milliseconds", &duration_ms, 1)
      .option("--iterations", "N", "window length in training iterations", &iterations, 1)
      .flag("--no-wait", "print the capture id and return without waiting for the window", &no_wait)
      .option("--socket", "PATH", "daemon API socket (or HOST:PORT)", &socket)
      .option("--tls-cert", "FILE", "TLS client certificate (PEM) for a HOST:PORT daemon",
              &tls.cert)
      .option("--tls-key", "FILE", "private key of --tls-cert", &tls.key)
      .option("--tls-ca", "FILE", "CA certificate the daemon's certificate chains to", &tls.ca)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  if ((pid > 0) == !workflow.empty()) {
    err << "error: give exactly one of --pid and --workflow\n";
    return 2;
  }
  if ((duration_ms > 0) == (iterations > 0)) {
    err << "error: give exactly one of --duration-ms and --iterations (a positive number)\n";
    return 2;
  }
  // The request carries them as i32: each is named with its bound (it said "value out of range").
  for (const auto& [name, value_name, value] :
       {std::tuple{"--pid", "PID", pid}, std::tuple{"--duration-ms", "N", duration_ms},
        std::tuple{"--iterations", "N", iterations}})
    if (value > INT32_MAX) {
      err << "error: option '" << name << "' expects " << value_name << " <= " << INT32_MAX
          << ", got " << value << "\n";
      return 2;
    }
  return with_daemon(socket, tls, err, [&](Connection& daemon) {
    rpc::TraceStarted started;
    if (pid > 0) {
      rpc::TraceRequest request;
      request.__set_pid(static_cast<int32_t>(pid));
      if (duration_ms > 0)
        request.__set_duration_ms(static_cast<int32_t>(duration_ms));
      else
        request.__set_iterations(static_cast<int32_t>(iterations));
      daemon->startTrace(started, request);
    } else {
      rpc::TraceByName request;
      request.workflow = workflow;
      if (duration_ms > 0)
        request.__set_duration_ms(static_cast<int32_t>(duration_ms));
      else
        request.__set_iterations(static_cast<int32_t>(iterations));
      daemon->startTraceOfWorkflow(started, request);
    }
    err << "trace: capture " << started.capture_id << " open in pid(s) " << join(started.pids)
        << "\n";
    rpc::TraceProgress progress;
    if (no_wait) {
      if (format == "json")
        out << json({{"capture_id", started.capture_id}, {"pids", started.pids}})
                   .dump(2, ' ', false, json::error_handler_t::replace)
            << "\n";
      else
        out << "capture " << started.capture_id << "\n";
      return 0;
    }
    do {
      daemon->traceProgress(progress, started.capture_id, 5000);
      if (!progress.done) err << "trace: " << progress.records << " records so far\n";
    } while (!progress.done);
    // Every process refused the window: nothing was traced, and the exit status says so.
    const bool refused = progress.__isset.refused;
    if (refused)
      err << "error: capture " << progress.capture_id
          << ": the window was refused: " << progress.refused << "\n";
    if (format == "json") {
      out << progress_json(progress).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      return refused ? 1 : 0;
    }
    if (refused) return 1;
    out << "capture " << progress.capture_id << " in " << progress.database_path << "\n";
    out << "  processes:       " << join(progress.pids) << "\n";
    out << "  records:         " << progress.records << " (" << progress.dropped_records
        << " dropped)\n";
    out << "  kernels:         "
        << (progress.__isset.kernels ? std::to_string(progress.kernels) : "-") << "\n";
    out << "  GPU utilization: "
        << (progress.__isset.gpu_busy_pct ? percent(progress.gpu_busy_pct) : "-") << "\n";
    out << "  top finding:     " << (progress.__isset.top_finding ? progress.top_finding : "none")
        << "\n";
    if (progress.__isset.note) out << "  note:            " << progress.note << "\n";
    out << "(fleetscope report " << progress.database_path << " --capture " << progress.capture_id
        << " for every finding)\n";
    return 0;
  });
}

int run_metrics_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  std::string socket = default_socket(), format = "table", workflow, since;
  rpc::TlsClientFiles tls = default_tls();
  int64_t limit = 1000;
  common::ArgParser parser(
      "fleetscope metrics [--workflow NAME] [--since AGE] [--limit N] [--socket PATH] [--tls-cert "
      "FILE --tls-key FILE --tls-ca FILE] "
      "[--format table|json]",
      "Always-on per-workflow GPU metrics from the daemon (workflow_metrics): GPU-seconds, "
      "busy fraction and memory peak per GPU and window.");
  parser.option("--workflow", "NAME", "one workflow (default: every one you may see)", &workflow)
      .option("--since", "AGE", "only windows ending within AGE, e.g. 10m, 2h, 1d (0 = all)",
              &since)
      .option("--limit", "N", "at most N rows (default 1000)", &limit)
      .option("--socket", "PATH", "daemon API socket (or HOST:PORT)", &socket)
      .option("--tls-cert", "FILE", "TLS client certificate (PEM) for a HOST:PORT daemon",
              &tls.cert)
      .option("--tls-key", "FILE", "private key of --tls-cert", &tls.key)
      .option("--tls-ca", "FILE", "CA certificate the daemon's certificate chains to", &tls.ca)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!check_format(format, err)) return 2;
  rpc::MetricsQuery query;
  if (!workflow.empty()) query.__set_workflow(workflow);
  if (!since.empty()) {
    try {
      auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
      if (auto bound = since_bound(since, now)) query.__set_since_ns(*bound);
    } catch (const std::invalid_argument& e) {
      err << "error: --since: " << e.what() << "\n";
      return 2;
    }
  }
  if (limit <= 0 || limit > 1'000'000) {
    err << "error: --limit must be in 1..1000000\n";
    return 2;
  }
  query.__set_limit(static_cast<int32_t>(limit));
  return with_daemon(socket, tls, err, [&](Connection& daemon) {
    std::vector<rpc::WorkflowMetric> rows;
    daemon->metrics(rows, query);
    if (format == "json") {
      json list = json::array();
      for (const auto& r : rows)
        list.push_back({{"workflow", r.workflow},
                        {"device", r.device},
                        {"window_start_ns", r.window_start_ns},
                        {"window_end_ns", r.window_end_ns},
                        {"metric", r.metric},
                        {"value", r.value}});
      out << list.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      return 0;
    }
    out << std::left << std::setw(32) << "WORKFLOW" << std::setw(5) << "GPU" << std::setw(24)
        << "WINDOW END (ns)" << std::setw(20) << "METRIC"
        << "VALUE\n";
    for (const auto& r : rows)
      out << std::left << std::setw(32) << terminal_safe(r.workflow) << std::setw(5) << r.device
          << std::setw(24) << r.window_end_ns << std::setw(20) << terminal_safe(r.metric) << r.value
          << "\n";
    // "yet" only when nothing was filtered out: with --since or --workflow the daemon may well
    // hold older windows or other workflows.
    if (rows.empty() && !query.__isset.since_ns && workflow.empty())
      out << "(no metrics yet: rows appear once per metrics window of the daemon)\n";
    else if (rows.empty())
      out << "(no metrics" << (workflow.empty() ? "" : " of workflow " + terminal_safe(workflow))
          << (query.__isset.since_ns ? " in windows ending in the last " + since : "")
          << ": rows appear once per metrics window of the daemon)\n";
    return 0;
  });
}

}  // namespace fleetscope::cli
