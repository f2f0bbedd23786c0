#include "fleetscope/daemon/config.h"

#include "fleetscope/common/text.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "fleetscope/common/args.h"

namespace fleetscope::daemon {
namespace {

struct Key {
  std::string* text = nullptr;
  int64_t* integer = nullptr;
  int64_t min = 0, max = INT64_MAX;
};

std::map<std::string, Key> keys(DaemonConfig& c) {
  return {
      {"database", {&c.database}},
      {"socket", {&c.socket}},
      {"agent_socket", {&c.agent_socket}},
      {"gate_socket", {&c.gate_socket}},
      {"lane_directory", {&c.lane_directory}},
      {"tcp_port", {nullptr, &c.tcp_port, 0, 65535}},
      {"tcp_address", {&c.tcp_address}},
      {"tls_cert", {&c.tls_cert}},
      {"tls_key", {&c.tls_key}},
      {"tls_ca", {&c.tls_ca}},
      {"tls_client_uids", {&c.tls_client_uids}},
      {"tls_default_uid", {nullptr, &c.tls_default_uid, -1, 4'294'967'294}},
      {"prometheus_address", {&c.prometheus_address}},
      {"prometheus_port", {nullptr, &c.prometheus_port, -1, 65535}},
      {"prometheus_web_config", {&c.prometheus_web_config}},
      {"sample_interval_ms", {nullptr, &c.sample_interval_ms, 10, 3'600'000}},
      {"metrics_window_s", {nullptr, &c.metrics_window_s, 1, 86'400}},
      {"nvml_library", {&c.nvml_library}},
      {"dcgm_library", {&c.dcgm_library}},
      {"dcgm_hostengine", {&c.dcgm_hostengine}},
      {"kubelet_pod_resources_socket", {&c.kubelet_pod_resources_socket}},
      {"retention_max_mb", {nullptr, &c.retention_max_mb, 0, INT64_MAX / (1 << 20)}},
      {"retention_max_age_days", {nullptr, &c.retention_max_age_days, 0, 36'500}},
      {"downsample_after_hours", {nullptr, &c.downsample_after_hours, 0, 876'000}},
      {"max_frame_bytes", {nullptr, &c.max_frame_bytes, 1024, INT32_MAX}},
      {"max_message_bytes", {nullptr, &c.max_message_bytes, 1024, INT32_MAX}},
      {"trace_grace_ms", {nullptr, &c.trace_grace_ms, 0, 3'600'000}},
      {"max_connections", {nullptr, &c.max_connections, 1, 1'000'000}},
      {"max_connections_per_uid", {nullptr, &c.max_connections_per_uid, 1, 1'000'000}},
      {"max_buffered_bytes", {nullptr, &c.max_buffered_bytes, 1 << 20, INT64_MAX}},
      {"request_deadline_ms", {nullptr, &c.request_deadline_ms, 100, 3'600'000}},
      {"api_max_frame_bytes", {nullptr, &c.api_max_frame_bytes, 1024, INT32_MAX}},
      {"cuda_context_mib", {nullptr, &c.cuda_context_mib, 0, 65'536}},
      {"single_lane_per_gpu", {nullptr, &c.single_lane_per_gpu, 0, 1}},
  };
}

using text::trim;

}  // namespace

std::string gate_socket_path(const DaemonConfig& config) {
  if (!config.gate_socket.empty()) return config.gate_socket;
  return std::filesystem::path(config.socket).parent_path().append("gate.sock").string();
}

std::string lane_directory_path(const DaemonConfig& config, const char* lane_dir_env) {
  if (!config.lane_directory.empty()) return config.lane_directory;
  // The interposition library reads the same variable (sharer/lanes).
  if (lane_dir_env && *lane_dir_env) return lane_dir_env;
  return "/dev/shm";
}

void apply_config_text(DaemonConfig& config, const std::string& text, const std::string& origin) {
  auto table = keys(config);
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::string where = origin + ":" + std::to_string(number) + ": ";
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error(where + "expected 'key = value', got '" + line + "'");
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    for (char& c : key)
      if (c == '-') c = '_';
    auto it = table.find(key);
    if (it == table.end()) throw std::runtime_error(where + "unknown key '" + key + "'");
    if (it->second.text) {
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      *it->second.text = value;
      continue;
    }
    size_t used = 0;
    int64_t parsed = 0;
    try {
      parsed = std::stoll(value, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != value.size())
      throw std::runtime_error(where + "'" + key + "' expects an integer, got '" + value + "'");
    if (parsed < it->second.min || parsed > it->second.max)
      throw std::runtime_error(where + "'" + key + "' must be in " +
                               std::to_string(it->second.min) + ".." +
                               std::to_string(it->second.max) + ", got " + value);
    *it->second.integer = parsed;
  }
}

void apply_config_file(DaemonConfig& config, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the config file");
  std::ostringstream text;
  text << in.rdbuf();
  apply_config_text(config, text.str(), path);
  config.config_file = path;
}

std::optional<int> parse_command_line(const std::vector<std::string>& args, DaemonConfig& config,
                                      std::ostream& out, std::ostream& err) {
  // Flags are parsed into text first, so that the config file (named by one of them) is applied
  // before them and they still win.
  DaemonConfig defaults;
  std::map<std::string, std::string> given;
  std::string config_file;
  common::ArgParser parser(
      "fleetscoped [--config FILE] [options]",
      "The fleetscope host daemon: agent registry, on-demand traces of running jobs, "
      "always-on GPU metrics, Thrift API on a Unix socket, Prometheus endpoint.");
  parser.option("--config", "FILE", "config file (key = value lines; keys are the options below)",
                &config_file);
  bool show_version = false;
  parser.flag("--version", "print the version and exit", &show_version);
  auto table = keys(defaults);
  std::map<std::string, std::string> help = {
      {"database", "host database (created when missing)"},
      {"socket", "API socket (CLI, GUI)"},
      {"agent_socket", "socket agents register on"},
      {"gate_socket", "iteration gate socket of shared lanes (empty: gate.sock beside --socket)"},
      {"lane_directory",
       "folder of the lanes' ledgers (empty: $FLEETSCOPE_LANE_DIR, else /dev/shm)"},
      {"tcp_port", "also serve the API on TCP (tcp_address:PORT; 0 = off)"},
      {"tcp_address", "address of the TCP listener (loopback unless TLS is configured)"},
      {"tls_cert", "TLS: server certificate (PEM) of the TCP listener"},
      {"tls_key", "TLS: private key (PEM) of tls_cert"},
      {"tls_ca", "TLS: CA certificate(s) (PEM) client certificates must chain to"},
      {"tls_client_uids", "TLS: 'CN:uid, ...' user of each client certificate name"},
      {"tls_default_uid", "TLS: uid of a certificate whose CN is not listed (-1 = refuse)"},
      {"prometheus_address", "address of the Prometheus endpoint"},
      {"prometheus_port", "port of the Prometheus endpoint (0 = any, -1 = off)"},
      {"prometheus_web_config",
       "exporter-toolkit web.yml of the Prometheus endpoint: TLS and basic auth (empty: none)"},
      {"sample_interval_ms", "device sampling period"},
      {"metrics_window_s", "period of workflow_metrics rows"},
      {"nvml_library", "NVML library to dlopen"},
      {"dcgm_library",
       "DCGM library to dlopen for profiling fields (empty: libdcgm.so.4, .so.3, .so; off: none)"},
      {"dcgm_hostengine", "nv-hostengine address (empty: an embedded DCGM host engine)"},
      {"kubelet_pod_resources_socket",
       "the kubelet's pod-resources socket: pod names of the GPUs' processes (off: none)"},
      {"retention_max_mb", "bound on the database size (0 = none)"},
      {"retention_max_age_days", "drop captures and samples older than this (0 = never)"},
      {"downsample_after_hours",
       "device samples older than this become 1-minute means (0 = never)"},
      {"max_frame_bytes", "largest Thrift frame accepted"},
      {"max_message_bytes", "largest Thrift message accepted"},
      {"trace_grace_ms", "how long past its deadline a window may stay open"},
      {"max_connections", "connections on all sockets together (lowered to fit RLIMIT_NOFILE)"},
      {"max_connections_per_uid", "connections of one uid on all sockets together"},
      {"max_buffered_bytes", "bytes of requests being read, all connections together"},
      {"request_deadline_ms", "time from a request's first byte to its last"},
      {"api_max_frame_bytes", "largest Thrift frame accepted on the API sockets"},
      {"cuda_context_mib",
       "sharing: CUDA context memory of one job process, charged outside its lane (the figure "
       "scripts/gpu-check measures)"},
      {"single_lane_per_gpu",
       "sharing: 1 puts jobs placed without a plan in one lane per GPU that they time-slice "
       "(Salus's mode)"},
  };
  for (auto& [key, spec] : table) {
    std::string flag = "--" + key;
    for (char& c : flag)
      if (c == '_') c = '-';
    std::string shown = spec.text ? *spec.text : std::to_string(*spec.integer);
    parser.option(flag, spec.text ? "TEXT" : "N", help[key] + " [" + shown + "]", &given[key]);
  }
  if (auto code = parser.parse(args, out, err)) return code;
  if (show_version) {
    out << "fleetscoped " << FLEETSCOPE_DAEMON_VERSION << '\n';
    return 0;
  }
  try {
    if (!config_file.empty()) apply_config_file(config, config_file);
    std::string flags;
    for (const auto& [key, value] : given)
      if (!value.empty()) flags += key + " = " + value + "\n";
    apply_config_text(config, flags, "command line");
  } catch (const std::exception& e) {
    err << "fleetscoped: " << e.what() << '\n';
    return 1;
  }
  return std::nullopt;
}

}  // namespace fleetscope::daemon
