#include "fleetscope/analyzer/fleet.h"

#include <algorithm>
#include <map>
#include <set>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/loader.h"

namespace fleetscope::analyzer {

std::vector<WorkflowWaste> rank_workflows(const std::vector<std::string>& database_paths,
                                          const FleetProgress& progress) {
  std::map<std::string, WorkflowWaste> by_name;
  std::map<std::string, std::set<std::string>> captures_of;  // name → "db#capture"
  std::map<std::string, std::map<std::string, int64_t>> rule_impact;
  for (size_t d = 0; d < database_paths.size(); ++d) {
    const std::string& path = database_paths[d];
    if (progress) progress(path, d, database_paths.size());
    store::Reader reader(path);
    const auto findings = reader.findings();
    for (const auto& capture : reader.captures()) {
      CaptureData data = load_capture(reader, capture.id);
      std::set<std::string> names_in_capture;
      for (const auto& [key, members] : events_by_workflow_device(data)) {
        WorkflowInfo info = workflow_info(data, key.first);
        WorkflowWaste& w = by_name[info.name];
        w.workflow = info.name;
        if (w.user.empty()) w.user = info.user;
        std::vector<Interval> spans;
        spans.reserve(members.size());
        int64_t last = INT64_MIN;
        for (uint32_t i : members) {
          spans.push_back({data.gpu.start[i], data.gpu.end[i]});
          last = std::max(last, data.gpu.end[i]);
        }
        const int64_t span = last - data.gpu.start[members.front()];
        const int64_t busy = total_length(unite_sorted(spans));
        w.span_ns += span;
        w.busy_ns += busy;
        w.idle_ns += span - busy;
        ++w.devices;
        captures_of[info.name].insert(path + "#" + std::to_string(capture.id));
        names_in_capture.insert(info.name);
      }
      // Findings are per capture; credit them to the capture's jobs (split evenly). A capture
      // that `fleetscope analyze` has not seen yet is analysed here (nothing is stored).
      if (names_in_capture.empty()) continue;
      std::vector<store::Finding> capture_findings;
      for (const auto& f : findings)
        if (f.captureId == capture.id) capture_findings.push_back(f);
      if (capture_findings.empty()) capture_findings = analyze_capture(data).findings;
      for (const auto& f : capture_findings) {
        const int64_t share = f.impact_ns / static_cast<int64_t>(names_in_capture.size());
        for (const auto& name : names_in_capture) {
          by_name[name].findings_impact_ns += share;
          rule_impact[name][f.rule] += share;
        }
      }
    }
  }
  std::vector<WorkflowWaste> out;
  for (auto& [name, w] : by_name) {
    w.captures = static_cast<int64_t>(captures_of[name].size());
    int64_t best = -1;
    for (const auto& [rule, impact] : rule_impact[name])
      if (impact > best) best = impact, w.top_rule = rule;
    out.push_back(w);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.idle_ns != b.idle_ns ? a.idle_ns > b.idle_ns : a.workflow < b.workflow;
  });
  return out;
}

}  // namespace fleetscope::analyzer
