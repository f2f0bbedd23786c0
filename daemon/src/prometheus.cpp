#include "fleetscope/daemon/prometheus.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fleetscope::daemon {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

}  // namespace

std::string escape_label_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string render_exposition(const ExpositionInput& in) {
  std::ostringstream out;
  std::map<int, const DeviceReading*> by_index;
  for (const auto& d : in.devices) by_index[d.index] = &d;
  auto device_labels = [&](int index) {
    std::string uuid, model;
    if (auto it = by_index.find(index); it != by_index.end()) {
      uuid = it->second->uuid;
      model = it->second->name;
    }
    return "gpu=\"" + std::to_string(index) + "\",UUID=\"" + escape_label_value(uuid) +
           "\",Hostname=\"" + escape_label_value(in.hostname) + "\",modelName=\"" +
           escape_label_value(model) + "\"";
  };
  auto header = [&](const Family& f) {
    out << "# HELP " << f.name << ' ' << f.help << "\n# TYPE " << f.name << ' ' << f.type << '\n';
  };
  auto device_family = [&](const Family& f, auto value_of) {
    bool any = false;
    for (const auto& d : in.devices) {
      auto value = value_of(d);
      if (!value) continue;
      if (!any) header(f);
      any = true;
      out << f.name << '{' << device_labels(d.index) << "} " << number(static_cast<double>(*value))
          << '\n';
    }
  };
  header(
      {"fleetscope_device_sampling_up", "gauge", "1 when NVML device sampling works on this host"});
  out << "fleetscope_device_sampling_up{Hostname=\"" << escape_label_value(in.hostname) << "\"} "
      << (in.device_sampling ? 1 : 0) << '\n';
  header({"fleetscope_agents", "gauge", "Processes with a registered fleetscope agent"});
  out << "fleetscope_agents{Hostname=\"" << escape_label_value(in.hostname) << "\"} " << in.agents
      << '\n';
  header({"fleetscope_trace_windows_open", "gauge", "On-demand trace windows currently open"});
  out << "fleetscope_trace_windows_open{Hostname=\"" << escape_label_value(in.hostname) << "\"} "
      << in.open_windows << '\n';
  device_family({"fleetscope_gpu_utilization_ratio", "gauge",
                 "Fraction of time a kernel ran on the GPU (NVML)"},
                [](const DeviceReading& d) -> std::optional<double> {
                  if (!d.gpu_utilization_pct) return std::nullopt;
                  return *d.gpu_utilization_pct / 100.0;
                });
  device_family({"fleetscope_gpu_memory_used_bytes", "gauge", "Device memory in use"},
                [](const DeviceReading& d) { return d.memory_used_bytes; });
  device_family({"fleetscope_gpu_memory_total_bytes", "gauge", "Device memory in total"},
                [](const DeviceReading& d) { return d.memory_total_bytes; });
  device_family({"fleetscope_gpu_power_watts", "gauge", "Board power draw"},
                [](const DeviceReading& d) { return d.power_watts; });
  device_family({"fleetscope_gpu_sm_clock_hertz", "gauge", "SM clock"},
                [](const DeviceReading& d) -> std::optional<double> {
                  if (!d.sm_clock_mhz) return std::nullopt;
                  return static_cast<double>(*d.sm_clock_mhz) * 1e6;
                });
  // DCGM profiling fields under dcgm-exporter's own names (its default counters CSV exposes
  // DCGM_FI_PROF_* as gauges, ratios 0..1), so its dashboards and alerts work on these series.
  header({"fleetscope_dcgm_profiling_up", "gauge",
          "1 when DCGM profiling fields are sampled on this host"});
  out << "fleetscope_dcgm_profiling_up{Hostname=\"" << escape_label_value(in.hostname) << "\"} "
      << (in.profiling_sampling ? 1 : 0) << '\n';
  auto profiling_family = [&](const Family& f, auto value_of) {
    bool any = false;
    for (const auto& r : in.profiling) {
      std::optional<double> value = value_of(r);
      if (!value) continue;
      if (!any) header(f);
      any = true;
      out << f.name << '{' << device_labels(r.gpu) << "} " << number(*value) << '\n';
    }
  };
  profiling_family({"DCGM_FI_PROF_SM_ACTIVE", "gauge",
                    "Ratio of cycles an SM has at least one warp assigned (DCGM)"},
                   [](const ProfilingReading& r) { return r.sm_active; });
  profiling_family({"DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
                    "Ratio of resident warps to the maximum an SM supports (DCGM)"},
                   [](const ProfilingReading& r) { return r.sm_occupancy; });
  profiling_family({"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
                    "Ratio of cycles the tensor pipes are active (DCGM)"},
                   [](const ProfilingReading& r) { return r.tensor_active; });
  // Lane out-of-memory refusals (the job saw CUDA_ERROR_OUT_OF_MEMORY from its lane's cap, not
  // from the device): counted per workflow and GPU so an operator can tell one from the other.
  header({"fleetscope_lane_denied_allocations_total", "counter",
          "Device allocations a memory lane refused (its cap, not the GPU, was full)"});
  for (const auto& [key, count] : in.lane_denials)
    out << "fleetscope_lane_denied_allocations_total{" << device_labels(key.second)
        << ",workflow=\"" << escape_label_value(key.first) << "\"} " << count << '\n';
  // What `fleetscope fleet --prometheus` shows beside the GPU time: each workflow's captures in
  // this host's database and its largest stored finding (one series per workflow: the rule is a
  // label of the top one only, so the cardinality stays that of the workflows).
  if (!in.workflow_captures.empty()) {
    const std::string host = "Hostname=\"" + escape_label_value(in.hostname) + "\"";
    header({"fleetscope_workflow_captures", "gauge",
            "Trace captures of the workflow in this host's database"});
    for (const auto& [workflow, c] : in.workflow_captures)
      out << "fleetscope_workflow_captures{" << host << ",workflow=\""
          << escape_label_value(workflow) << "\"} " << c.captures << '\n';
    header({"fleetscope_workflow_top_finding_impact_seconds", "gauge",
            "Impact of the workflow's largest stored finding; its rule is the label"});
    for (const auto& [workflow, c] : in.workflow_captures)
      if (!c.top_rule.empty())
        out << "fleetscope_workflow_top_finding_impact_seconds{" << host << ",workflow=\""
            << escape_label_value(workflow) << "\",rule=\"" << escape_label_value(c.top_rule)
            << "\"} " << number(static_cast<double>(c.top_impact_ns) / 1e9) << '\n';
  }
  auto workflow_family = [&](const Family& f, auto value_of) {
    if (in.workflows.empty()) return;
    header(f);
    for (const auto& [key, totals] : in.workflows)
      out << f.name << '{' << device_labels(key.second) << ",workflow=\""
          << escape_label_value(key.first) << "\"} " << number(value_of(totals)) << '\n';
  };
  workflow_family({"fleetscope_workflow_gpu_seconds_total", "counter",
                   "Seconds the workflow held a context on the GPU"},
                  [](const WorkflowTotals& t) { return t.gpu_seconds; });
  workflow_family({"fleetscope_workflow_gpu_busy_seconds_total", "counter",
                   "GPU seconds weighted by the workflow's SM utilization"},
                  [](const WorkflowTotals& t) { return t.busy_seconds; });
  workflow_family(
      {"fleetscope_workflow_gpu_memory_peak_bytes", "gauge",
       "Largest device memory the workflow used in one sample since the daemon started"},
      [](const WorkflowTotals& t) { return static_cast<double>(t.memory_peak_bytes); });
  return out.str();
}

MetricsEndpoint::MetricsEndpoint(std::string address, int port, std::function<std::string()> render,
                                 EndpointLimits limits)
    : render_(std::move(render)), limits_(limits) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0)
    throw std::runtime_error("metrics endpoint: socket: " + std::string(strerror(errno)));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &bound.sin_addr) != 1) {
    ::close(listen_fd_);
    throw std::runtime_error("metrics endpoint: '" + address + "' is not an IPv4 address");
  }
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    std::string why = strerror(errno);
    ::close(listen_fd_);
    throw std::runtime_error("metrics endpoint: cannot listen on " + address + ":" +
                             std::to_string(port) + ": " + why);
  }
  socklen_t length = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = ntohs(bound.sin_port);
  thread_ = std::thread([this] { serve(); });
}

MetricsEndpoint::~MetricsEndpoint() {
  stop();
}

void MetricsEndpoint::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  {
    // Clients still being served are cut off: their reads and writes fail at once.
    std::lock_guard lock(clients_mutex_);
    for (auto& client : clients_)
      if (!client->done) ::shutdown(client->fd, SHUT_RDWR);
  }
  for (auto& client : clients_)
    if (client->thread.joinable()) client->thread.join();
  clients_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void MetricsEndpoint::reap_finished() {
  std::lock_guard lock(clients_mutex_);
  for (auto it = clients_.begin(); it != clients_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

void MetricsEndpoint::serve() {
  int backoff_ms = 0;
  while (!stopping_) {
    pollfd waiting{listen_fd_, POLLIN, 0};
    if (::poll(&waiting, 1, backoff_ms > 0 ? backoff_ms : 200) <= 0) {
      reap_finished();
      continue;
    }
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    reap_finished();
    if (fd < 0) {
      // EMFILE and the like: wait a little (the poll above) instead of spinning; never give up.
      backoff_ms =
          errno == EINTR || errno == ECONNABORTED ? 0 : std::min(backoff_ms * 2 + 10, 1000);
      continue;
    }
    backoff_ms = 0;
    std::lock_guard lock(clients_mutex_);
    if (static_cast<int>(clients_.size()) >= limits_.max_clients) {
      // Busy: refused at once rather than queued behind slow clients.
      static constexpr char kBusy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      ::send(fd, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    auto client = std::make_shared<Client>();
    client->fd = fd;
    client->thread = std::thread([this, client] {
      answer(client->fd);
      std::lock_guard done_lock(clients_mutex_);
      ::close(client->fd);
      client->done = true;
    });
    clients_.push_back(std::move(client));
  }
}

void MetricsEndpoint::answer(int client) {
  // The whole request must arrive, and the whole answer leave, within the deadline, however
  // slowly the bytes come (a per-recv timeout would restart with every byte).
  const auto deadline = std::chrono::steady_clock::now() + limits_.request_deadline;
  auto wait_for = [&](short events) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stopping_) return false;
    pollfd p{client, events, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  };
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    if (!wait_for(POLLIN)) return;
    ssize_t n = ::recv(client, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    request.append(buffer, static_cast<size_t>(n));
  }
  std::string status = "404 Not Found", type = "text/plain", body = "only GET /metrics is served\n";
  if (request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0) {
    status = "200 OK";
    type = "text/plain; version=0.0.4; charset=utf-8";
    body = render_();
  }
  std::string response = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                         "\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nConnection: close\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < response.size()) {
    if (!wait_for(POLLOUT)) return;
    ssize_t n =
        ::send(client, response.data() + sent, response.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace fleetscope::daemon
