#include "fleetscope/cli/prometheus_fleet.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fleetscope/common/args.h"

namespace fleetscope::cli {
namespace {

std::string counter(const std::string& name, const std::string& range) {
  return range.empty() ? name : "increase(" + name + "[" + range + "])";
}

std::string url_encode(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += {'%', hex[c >> 4], hex[c & 15]};
  }
  return out;
}

}  // namespace

// Metric names: daemon/prometheus.h. Summed over hosts and GPUs per value of label `by`.
std::string held_query(const std::string& range, const std::string& by) {
  return "sum by (" + by + ") (" + counter("fleetscope_workflow_gpu_seconds_total", range) + ")";
}
std::string busy_query(const std::string& range, const std::string& by) {
  return "sum by (" + by + ") (" + counter("fleetscope_workflow_gpu_busy_seconds_total", range) +
         ")";
}
std::string devices_query(const std::string& range, const std::string& by) {
  return "count by (" + by + ") (" + counter("fleetscope_workflow_gpu_seconds_total", range) + ")";
}

std::string captures_query(const std::string& by) {
  return "sum by (" + by + ") (fleetscope_workflow_captures)";
}
std::string top_finding_query() {
  return "fleetscope_workflow_top_finding_impact_seconds";
}

// A PromQL duration: one or more NUMBER UNIT pairs (1h, 1d, 1h30m; units ms, s, m, h, d, w, y).
// `zero` tells whether every number is 0.
bool is_promql_duration(const std::string& text, bool& zero) {
  zero = true;
  size_t at = 0;
  if (text.empty()) return false;
  while (at < text.size()) {
    const size_t digits = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      zero = zero && text[at] == '0';
      ++at;
    }
    if (at == digits || at - digits > 12) return false;
    if (text.compare(at, 2, "ms") == 0) {
      at += 2;
    } else if (at < text.size() && std::string_view("smhdwy").find(text[at]) != std::string::npos) {
      ++at;
    } else {
      return false;
    }
  }
  return true;
}

bool is_label_name(const std::string& name) {
  // Prometheus' data model: [a-zA-Z_][a-zA-Z0-9_]*; names starting "__" are reserved.
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name.rfind("__", 0) == 0)
    return false;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

std::vector<std::pair<std::string, double>> parse_vector_by_workflow(const std::string& json_text,
                                                                     const std::string& key) {
  std::vector<std::pair<std::string, double>> out;
  for (auto& [workflow, unused, value] : parse_vector_by_workflow_and(json_text, "", key))
    out.emplace_back(std::move(workflow), value);
  return out;
}

void add_captures_and_findings(
    std::vector<analyzer::WorkflowWaste>& ranking,
    const std::vector<std::pair<std::string, double>>& captures,
    const std::vector<std::tuple<std::string, std::string, double>>& top_findings) {
  std::map<std::string, analyzer::WorkflowWaste*> by_name;
  for (auto& w : ranking) by_name[w.workflow] = &w;
  for (const auto& [workflow, count] : captures)
    if (auto it = by_name.find(workflow); it != by_name.end())
      it->second->captures = static_cast<int64_t>(count);
  std::map<std::string, double> best;
  for (const auto& [workflow, rule, seconds] : top_findings) {
    auto it = by_name.find(workflow);
    if (it == by_name.end() || rule.empty()) continue;
    auto [known, fresh] = best.try_emplace(workflow, seconds);
    if (!fresh && seconds <= known->second) continue;
    known->second = seconds;
    it->second->top_rule = rule;
    it->second->findings_impact_ns = static_cast<int64_t>(seconds * 1e9);
  }
}

std::vector<std::tuple<std::string, std::string, double>> parse_vector_by_workflow_and(
    const std::string& json_text, const std::string& label, const std::string& key) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("Prometheus answer is not JSON: ") + e.what());
  }
  if (doc.value("status", "") != "success")
    throw std::runtime_error(
        "Prometheus query failed: " + doc.value("errorType", std::string("?")) + ": " +
        doc.value("error", std::string("?")));
  const auto& data = doc.at("data");
  if (data.value("resultType", "") != "vector")
    throw std::runtime_error("Prometheus answered a " + data.value("resultType", std::string("?")) +
                             ", expected a vector");
  std::vector<std::tuple<std::string, std::string, double>> out;
  for (const auto& sample : data.at("result")) {
    std::string workflow = sample.at("metric").value(key, "");
    std::string other = label.empty() ? "" : sample.at("metric").value(label, "");
    // value: [ <unix time>, "<number as text>" ] (Prometheus HTTP API, instant vectors)
    double value = std::stod(sample.at("value").at(1).get<std::string>());
    out.emplace_back(workflow, other, value);
  }
  return out;
}

std::vector<analyzer::WorkflowWaste> ranking_from_prometheus(
    const std::vector<std::pair<std::string, double>>& held,
    const std::vector<std::pair<std::string, double>>& busy,
    const std::vector<std::pair<std::string, double>>& devices) {
  std::map<std::string, analyzer::WorkflowWaste> by_name;
  for (const auto& [workflow, seconds] : held) {
    auto& w = by_name[workflow];
    w.workflow = workflow;
    w.span_ns = static_cast<int64_t>(seconds * 1e9);
  }
  for (const auto& [workflow, seconds] : busy)
    if (auto it = by_name.find(workflow); it != by_name.end())
      it->second.busy_ns = std::min(it->second.span_ns, static_cast<int64_t>(seconds * 1e9));
  for (const auto& [workflow, count] : devices)
    if (auto it = by_name.find(workflow); it != by_name.end())
      it->second.devices = static_cast<int64_t>(count);
  std::vector<analyzer::WorkflowWaste> ranking;
  for (auto& [name, w] : by_name) {
    w.idle_ns = w.span_ns - w.busy_ns;
    ranking.push_back(w);
  }
  std::sort(ranking.begin(), ranking.end(), [](const auto& a, const auto& b) {
    return a.idle_ns != b.idle_ns ? a.idle_ns > b.idle_ns : a.workflow < b.workflow;
  });
  return ranking;
}

std::string http_get(const std::string& url, int timeout_ms) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw std::runtime_error("'" + url + "': only http:// URLs are supported");
  std::string rest = url.substr(scheme.size());
  std::string authority = rest.substr(0, rest.find('/'));
  std::string path = rest.size() > authority.size() ? rest.substr(authority.size()) : "/";
  std::string host = authority, port = "80";
  if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw std::runtime_error("cannot resolve " + host + ": " + gai_strerror(rc));
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0)
    throw std::runtime_error("cannot connect to " + authority + ": " + std::strerror(errno));
  // HTTP/1.0: the server closes after the body, so no chunked encoding to undo.
  std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: " + authority + "\r\nAccept: application/json\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char chunk[8192];
  ssize_t n;
  while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0) reply.append(chunk, static_cast<size_t>(n));
  close(fd);
  auto header_end = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/", 0) != 0 || header_end == std::string::npos)
    throw std::runtime_error("no HTTP answer from " + authority);
  std::string status = reply.substr(0, reply.find("\r\n"));
  std::string body = reply.substr(header_end + 4);
  if (status.find(" 200 ") == std::string::npos && status.find(" 400 ") == std::string::npos &&
      status.find(" 422 ") ==
          std::string::npos)  // the API puts errors in the JSON body with 400/422
    throw std::runtime_error(authority + " answered '" + status + "'");
  return body;
}

int run_prometheus_fleet(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  std::string url, format = "table", range, by = "workflow";
  int64_t top = 20;
  common::ArgParser parser(
      "fleetscope fleet --prometheus URL [--range DURATION] [--by LABEL] [--format "
      "table|json|csv] [--top N]",
      "Ranks jobs across every host a Prometheus server scrapes by wasted GPU-hours "
      "(GPU-seconds held minus busy GPU-seconds, from each host's fleetscoped).");
  parser.option("--prometheus", "URL", "Prometheus server, e.g. http://prometheus:9090", &url)
      .option("--range", "DURATION",
              "only the last DURATION (PromQL, e.g. 1d); default: since each daemon started",
              &range)
      .option("--by", "LABEL",
              "rank by this label of the series instead of the workflow: slurm_job_id, "
              "slurm_job_user, k8s_pod_uid, k8s_pod, k8s_namespace, ... (docs/daemon.md)",
              &by)
      .option("--format", "FORMAT", "table (default), json or csv", &format)
      .option("--top", "N", "show the N most wasteful jobs (0 = all; default 20)", &top, 0);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json" && format != "csv") {
    err << "error: --format must be table, json or csv\n";
    return 2;
  }
  if (!is_label_name(by)) {
    err << "error: --by expects a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), got '" << by
        << "'\n";
    return 2;
  }
  // The range goes into the PromQL text: anything but a duration changed the query
  // ('1d]) or vector(1' is PromQL too) or came back as Prometheus' parse error. 0 is every
  // sample since each daemon started, as 0 is "no limit" for the CLI's other bounds.
  if (bool zero = false; !range.empty()) {
    if (!is_promql_duration(range, zero)) {
      err << "error: --range expects a Prometheus duration such as 1h, 1d or 1h30m (units ms, s, "
             "m, h, d, w, y), got '"
          << range << "'\n";
      return 2;
    }
    if (zero) range.clear();
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  try {
    auto query = [&](const std::string& promql) {
      return parse_vector_by_workflow(http_get(url + "/api/v1/query?query=" + url_encode(promql)),
                                      by);
    };
    auto ranking =
        ranking_from_prometheus(query(held_query(range, by)), query(busy_query(range, by)),
                                query(devices_query(range, by)));
    // CAPTURES and TOP FINDING from the daemons' host databases (their current state: a capture
    // count and a finding are not counters, so --range does not apply to them).
    add_captures_and_findings(
        ranking, query(captures_query(by)),
        parse_vector_by_workflow_and(
            http_get(url + "/api/v1/query?query=" + url_encode(top_finding_query())), "rule", by));
    if (top > 0 && ranking.size() > static_cast<size_t>(top))
      ranking.resize(static_cast<size_t>(top));
    // Series without the label (a workflow outside any Slurm job or pod) are one group.
    for (auto& w : ranking)
      if (w.workflow.empty()) w.workflow = "(no " + by + ")";
    analyzer::write_fleet_ranking(ranking, format, out, by);
    return 0;
  } catch (const std::exception& e) {
    err << "error: " << url << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace fleetscope::cli
