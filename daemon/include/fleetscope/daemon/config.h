// fleetscoped's settings: defaults, an optional config file (`key = value` lines, `#` comments;
// the keys are the long flag names with '_' or '-'), then command-line flags, which win.
// SIGHUP re-reads the file and applies what can change while running (sampling, windows,
// retention); socket and database changes need a restart, and the daemon says so.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/kubelet/kubelet_pod_resources.h"

namespace fleetscope::daemon {

struct DaemonConfig {
  std::string database = "/var/lib/fleetscope/host.db";
  std::string socket = "/run/fleetscope/fleetscoped.sock";  // the API (CLI, GUI)
  std::string agent_socket = "/run/fleetscope/agent.sock";  // agents register here
  std::string gate_socket;     // the iteration gate; empty = gate.sock beside `socket`
  std::string lane_directory;  // lane ledgers; empty = $FLEETSCOPE_LANE_DIR, else /dev/shm
  int64_t tcp_port = 0;        // 0 = no TCP; else 127.0.0.1:PORT
  std::string tcp_address = "127.0.0.1";  // loopback only, unless TLS is configured
  // TLS on the TCP listener (tls_listener.h): all three files, or none (plain TCP).
  std::string tls_cert, tls_key, tls_ca;
  std::string tls_client_uids;  // "CN:uid, ..." — whose certificate acts as which user
  int64_t tls_default_uid =
      -1;  // uid of a verified certificate whose CN is not listed; -1 = refuse
  std::string prometheus_address = "127.0.0.1";
  int64_t prometheus_port = 9402;  // 0 = any free port, -1 = off
  // exporter-toolkit's web.yml (web_config.h): TLS and basic auth of the Prometheus endpoint.
  std::string prometheus_web_config;
  int64_t sample_interval_ms = 1000;
  int64_t metrics_window_s = 60;  // workflow_metrics row period
  std::string nvml_library = "libnvidia-ml.so.1";
  // DCGM profiling fields (dcgm_sampler.h): empty = libdcgm.so.4, .so.3, .so in turn; "off" = none.
  std::string dcgm_library;
  std::string dcgm_hostengine;  // empty = embedded host engine; else nv-hostengine's address
  // The kubelet's pod-resources socket (kubelet_pod_resources.h): pod names by GPU; "off" = none.
  std::string kubelet_pod_resources_socket = kubelet::kDefaultPodResourcesSocket;
  int64_t retention_max_mb = 10240;     // 0 = unbounded
  int64_t retention_max_age_days = 30;  // 0 = unbounded
  int64_t downsample_after_hours = 24;  // 0 = never
  int64_t max_frame_bytes = 16 * 1024 * 1024;
  int64_t max_message_bytes = 16 * 1024 * 1024;
  int64_t trace_grace_ms = 5000;
  // What clients may hold (connection_guard.h): connections on every listener together and per
  // uid (lowered to what RLIMIT_NOFILE allows), bytes of requests being read, and the time from
  // a request's first byte to its last. API requests are small: their frames have a lower limit.
  int64_t max_connections = 1024;
  int64_t max_connections_per_uid = 128;
  int64_t max_buffered_bytes = 64 << 20;
  int64_t request_deadline_ms = 10'000;
  int64_t api_max_frame_bytes = 4 << 20;
  // The CUDA context each job process holds outside its lane (sharer/memory_model.h); the
  // sharing service and `share plan` read the same key; scripts/gpu-check measures it.
  int64_t cuda_context_mib = 300;
  // 1: Salus's single lane per GPU for jobs placed without a plan (they all time-slice one lane
  // that grows as they join), for hosts whose jobs accept time slicing; 0: a new lane per job
  // when memory allows (parallel lanes).
  int64_t single_lane_per_gpu = 0;
  std::string config_file;  // where the file settings came from
  // Where the daemon reads what the kernel says of its clients' processes (/proc/PID/cgroup,
  // scheduler_identity.h). Not a file setting: tests point it at a fabricated /proc.
  std::string proc_root = "/proc";
};

// Applies a config file's settings on top of `config`. Throws std::runtime_error naming the file,
// the line and what was expected for an unknown key or a bad value.
// The sharing service's gate socket and ledger folder with their defaults filled in
// (`lane_dir_env`: the value of FLEETSCOPE_LANE_DIR, or null).
std::string gate_socket_path(const DaemonConfig& config);
std::string lane_directory_path(const DaemonConfig& config, const char* lane_dir_env);

void apply_config_file(DaemonConfig& config, const std::string& path);
void apply_config_text(DaemonConfig& config, const std::string& text, const std::string& origin);

// Parses fleetscoped's command line (--config FILE plus one flag per key). Returns the exit code
// to end with (0 after --help, 2 on a usage error) or nullopt to run; errors in the config file
// are reported on `err` with exit code 1.
std::optional<int> parse_command_line(const std::vector<std::string>& args, DaemonConfig& config,
                                      std::ostream& out, std::ostream& err);

}  // namespace fleetscope::daemon
