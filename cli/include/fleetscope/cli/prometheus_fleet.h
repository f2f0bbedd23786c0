// `fleetscope fleet --prometheus URL`: the fleet ranking from a Prometheus server that scrapes
// every host's fleetscoped (PromQL over the HTTP API, /api/v1/query), instead of from trace
// databases. One host's traces stay in its database; the fleet-wide view comes from Prometheus
// (with federation or Thanos for larger fleets), never from a home-made aggregator.
#pragma once

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "fleetscope/analyzer/fleet.h"

namespace fleetscope::cli {

// The PromQL that gives, per value of label `by` (the workflow, or a scheduler label such as
// slurm_job_id or k8s_pod_uid that the daemon puts on a workflow's series), the GPU-seconds
// held and the busy GPU-seconds: the counters' current totals, or their increase over `range`
// (a PromQL duration like 1d) when set.
std::string held_query(const std::string& range, const std::string& by = "workflow");
std::string busy_query(const std::string& range, const std::string& by = "workflow");
std::string devices_query(const std::string& range, const std::string& by = "workflow");

// Parses a /api/v1/query answer of resultType "vector" into (value of label `key`, value) pairs.
// Throws std::runtime_error naming what was wrong (status error, another result type, ...).
std::vector<std::pair<std::string, double>> parse_vector_by_workflow(
    const std::string& json_text, const std::string& key = "workflow");

// The daemons' capture counts per value of `by`, and their top findings (series with a `rule`
// label).
std::string captures_query(const std::string& by = "workflow");
std::string top_finding_query();
// Like parse_vector_by_workflow, with one more label of each sample (empty when absent).
std::vector<std::tuple<std::string, std::string, double>> parse_vector_by_workflow_and(
    const std::string& json_text, const std::string& label, const std::string& key = "workflow");
// Fills CAPTURES (summed over hosts) and TOP FINDING (the rule with the largest impact on any
// host) of the ranking's workflows.
void add_captures_and_findings(
    std::vector<analyzer::WorkflowWaste>& ranking,
    const std::vector<std::pair<std::string, double>>& captures,
    const std::vector<std::tuple<std::string, std::string, double>>& top_findings);

// Ranking from the three query answers, sorted like rank_workflows (wasted time, largest first).
std::vector<analyzer::WorkflowWaste> ranking_from_prometheus(
    const std::vector<std::pair<std::string, double>>& held,
    const std::vector<std::pair<std::string, double>>& busy,
    const std::vector<std::pair<std::string, double>>& devices);

// GET of an http:// URL (no TLS; a Prometheus on the local network or behind a local proxy).
std::string http_get(const std::string& url, int timeout_ms = 10'000);

// `fleetscope fleet ... --prometheus URL`: returns the exit code.
int run_prometheus_fleet(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err);

}  // namespace fleetscope::cli
