#include "fleetscope/daemon/prometheus.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
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

std::string openssl_error() {
  char text[256] = "unknown error";
  if (unsigned long code = ERR_get_error()) ERR_error_string_n(code, text, sizeof text);
  return text;
}

// One client connection, plain or TLS, read and written without blocking (the caller polls).
// read_some/write_some: bytes moved (> 0), 0 at the end, kWantRead/kWantWrite to wait, kFailed.
constexpr int kWantRead = -1, kWantWrite = -2, kFailed = -3;
class ClientIo {
 public:
  ClientIo(int fd, SSL_CTX* tls) : fd_(fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (tls) {
      ssl_ = SSL_new(tls);
      if (ssl_)
        SSL_set_fd(ssl_, fd);
      else
        broken_ = true;  // never answer in plain text what must go over TLS
    }
  }
  ~ClientIo() {
    if (ssl_) SSL_free(ssl_);
  }
  // The TLS handshake, one step: 1 done, else what to wait for.
  int handshake() {
    if (broken_) return kFailed;
    if (!ssl_) return 1;
    ERR_clear_error();
    int rc = SSL_accept(ssl_);
    return rc == 1 ? 1 : translate(rc);
  }
  int read_some(char* into, size_t n) {
    if (!ssl_) {
      ssize_t got = ::recv(fd_, into, n, 0);
      if (got >= 0) return static_cast<int>(got);
      return errno == EAGAIN || errno == EINTR ? kWantRead : kFailed;
    }
    ERR_clear_error();
    int got = SSL_read(ssl_, into, static_cast<int>(n));
    return got > 0 ? got : translate(got);
  }
  int write_some(const char* from, size_t n) {
    if (!ssl_) {
      ssize_t put = ::send(fd_, from, n, MSG_NOSIGNAL);
      if (put >= 0) return static_cast<int>(put);
      return errno == EAGAIN || errno == EINTR ? kWantWrite : kFailed;
    }
    ERR_clear_error();
    int put = SSL_write(ssl_, from, static_cast<int>(n));
    return put > 0 ? put : translate(put);
  }

 private:
  int translate(int rc) {
    switch (SSL_get_error(ssl_, rc)) {
      case SSL_ERROR_WANT_READ:
        return kWantRead;
      case SSL_ERROR_WANT_WRITE:
        return kWantWrite;
      case SSL_ERROR_ZERO_RETURN:
        return 0;
      default:
        return kFailed;
    }
  }
  int fd_;
  SSL* ssl_ = nullptr;
  bool broken_ = false;
};

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
  // Slurm job, Kubernetes pod and container of a workflow, on each of its series: `fleet
  // --prometheus --by LABEL` and dashboards can rank by them across hosts. Keys are the daemon's
  // fixed set (valid label names); values are escaped.
  auto scheduler_labels = [&](const std::string& workflow) {
    std::string text;
    if (auto labels = in.workflow_labels.find(workflow); labels != in.workflow_labels.end())
      for (const auto& label : labels->second)
        if (auto eq = label.find('='); eq != std::string::npos)
          text +=
              ',' + label.substr(0, eq) + "=\"" + escape_label_value(label.substr(eq + 1)) + '"';
    return text;
  };
  // What `fleetscope fleet --prometheus` shows beside the GPU time: each workflow's captures in
  // this host's database and its largest stored finding (one series per workflow: the rule is a
  // label of the top one only, so the cardinality stays that of the workflows).
  if (!in.workflow_captures.empty()) {
    const std::string host = "Hostname=\"" + escape_label_value(in.hostname) + "\"";
    header({"fleetscope_workflow_captures", "gauge",
            "Trace captures of the workflow in this host's database"});
    for (const auto& [workflow, c] : in.workflow_captures)
      out << "fleetscope_workflow_captures{" << host << ",workflow=\""
          << escape_label_value(workflow) << '"' << scheduler_labels(workflow) << "} " << c.captures
          << '\n';
    header({"fleetscope_workflow_top_finding_impact_seconds", "gauge",
            "Impact of the workflow's largest stored finding; its rule is the label"});
    for (const auto& [workflow, c] : in.workflow_captures)
      if (!c.top_rule.empty())
        out << "fleetscope_workflow_top_finding_impact_seconds{" << host << ",workflow=\""
            << escape_label_value(workflow) << "\",rule=\"" << escape_label_value(c.top_rule) << '"'
            << scheduler_labels(workflow) << "} "
            << number(static_cast<double>(c.top_impact_ns) / 1e9) << '\n';
  }
  // The step-time tail of each workflow's latest analysed window (what `fleetscope fleet` shows
  // as STEP P50/P90/P99 and JITTER): quantiles as one gauge with Prometheus' `quantile` label
  // (the label its summaries use), jitter = std / mean of the step durations.
  if (!in.workflow_step_tails.empty()) {
    const std::string host = "Hostname=\"" + escape_label_value(in.hostname) + "\"";
    auto labels = [&](const std::string& workflow) {
      return host + ",workflow=\"" + escape_label_value(workflow) + '"' +
             scheduler_labels(workflow);
    };
    header({"fleetscope_workflow_step_time_seconds", "gauge",
            "Step time quantile of the workflow's latest analysed trace window (nearest rank)"});
    for (const auto& [workflow, tail] : in.workflow_step_tails)
      for (const auto& [quantile, ns] : {std::pair<const char*, double>{"0.5", tail.p50_ns},
                                         {"0.9", tail.p90_ns},
                                         {"0.99", tail.p99_ns}})
        out << "fleetscope_workflow_step_time_seconds{" << labels(workflow) << ",quantile=\""
            << quantile << "\"} " << number(ns / 1e9) << '\n';
    header({"fleetscope_workflow_step_time_jitter_ratio", "gauge",
            "Standard deviation over mean of the step times of that window"});
    for (const auto& [workflow, tail] : in.workflow_step_tails)
      out << "fleetscope_workflow_step_time_jitter_ratio{" << labels(workflow) << "} "
          << number(tail.jitter) << '\n';
    header({"fleetscope_workflow_steps", "gauge", "Steps in that window"});
    for (const auto& [workflow, tail] : in.workflow_step_tails)
      out << "fleetscope_workflow_steps{" << labels(workflow) << "} " << tail.steps << '\n';
  }
  auto workflow_family = [&](const Family& f, auto value_of) {
    if (in.workflows.empty()) return;
    header(f);
    for (const auto& [key, totals] : in.workflows) {
      out << f.name << '{' << device_labels(key.second) << ",workflow=\""
          << escape_label_value(key.first) << '"' << scheduler_labels(key.first) << "} "
          << number(value_of(totals)) << '\n';
    }
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
                                 EndpointLimits limits, WebConfig web)
    : render_(std::move(render)), limits_(limits), web_(std::move(web)) {
  if (web_.tls) {
    const WebConfig::Tls& tls = *web_.tls;
    tls_ = SSL_CTX_new(TLS_server_method());
    if (!tls_) throw std::runtime_error("metrics endpoint: cannot make a TLS context");
    SSL_CTX_set_min_proto_version(tls_,
                                  tls.min_version == "TLS13" ? TLS1_3_VERSION : TLS1_2_VERSION);
    auto fail = [&](const std::string& file, const std::string& what) {
      std::string why = openssl_error();
      SSL_CTX_free(tls_);
      tls_ = nullptr;
      throw std::runtime_error("metrics endpoint: " + file + ": " + what + ": " + why);
    };
    if (SSL_CTX_use_certificate_chain_file(tls_, tls.cert_file.c_str()) != 1)
      fail(tls.cert_file, "cannot load the certificate");
    if (SSL_CTX_use_PrivateKey_file(tls_, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(tls_) != 1)
      fail(tls.key_file, "cannot load the key of " + tls.cert_file);
    if (!tls.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(tls_, tls.client_ca_file.c_str(), nullptr) != 1)
        fail(tls.client_ca_file, "cannot load the client CA");
      int mode = SSL_VERIFY_PEER;
      if (tls.client_auth_type == "RequireAndVerifyClientCert")
        mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      if (tls.client_auth_type != "NoClientCert") SSL_CTX_set_verify(tls_, mode, nullptr);
    }
  }
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
  if (tls_) SSL_CTX_free(tls_);
  tls_ = nullptr;
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
  // The whole exchange (TLS handshake, request, answer) must be done within the deadline,
  // however slowly the bytes come (a per-recv timeout would restart with every byte).
  const auto deadline = std::chrono::steady_clock::now() + limits_.request_deadline;
  ClientIo io(client, tls_);
  auto wait_for = [&](int want) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stopping_ || want == kFailed) return false;
    pollfd p{client, static_cast<short>(want == kWantWrite ? POLLOUT : POLLIN), 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) > 0;
  };
  for (int step; (step = io.handshake()) != 1;)
    if (step == 0 || step == kFailed || !wait_for(step)) return;
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    int n = io.read_some(buffer, sizeof buffer);
    if (n == 0) return;
    if (n < 0) {
      if (!wait_for(n)) return;
      continue;
    }
    request.append(buffer, static_cast<size_t>(n));
  }
  std::string status = "404 Not Found", type = "text/plain", body = "only GET /metrics is served\n",
              extra;
  if (!basic_auth_allows(web_, request)) {
    status = "401 Unauthorized";
    body = "authentication required\n";
    extra = "WWW-Authenticate: Basic realm=\"fleetscoped\"\r\n";
  } else if (request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0) {
    status = "200 OK";
    type = "text/plain; version=0.0.4; charset=utf-8";
    body = render_();
  }
  std::string response = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
                         "Connection: close\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < response.size()) {
    int n = io.write_some(response.data() + sent, response.size() - sent);
    if (n == 0) return;
    if (n < 0) {
      if (!wait_for(n)) return;
      continue;
    }
    sent += static_cast<size_t>(n);
  }
}

}  // namespace fleetscope::daemon
