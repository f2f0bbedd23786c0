#include "fleetscope/sharer/fleet_packing.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "csv.h"
#include "fleetscope/sharer/workload.h"

namespace fleetscope::sharer {

namespace {

constexpr int kWholeGpu = 1000;

struct NodeState {
  std::vector<int> used_milli;  // per GPU
  int pods = 0;
};

struct Assignment {
  int node = -1;
  std::vector<int> gpus;
  int milli = 0;
};

class Packer {
 public:
  Packer(const std::vector<GpuNode>& nodes, PackingStrategy strategy) : strategy_(strategy) {
    for (const auto& node : nodes) nodes_.push_back(NodeState{std::vector<int>(node.gpus, 0), 0});
  }

  bool place(const Pod& pod, Assignment& out, int grow_node_gpus) {
    const bool fractional =
        pod.num_gpu == 1 && pod.gpu_milli < kWholeGpu && strategy_ != PackingStrategy::kExclusive;
    auto attempt = [&] {
      return fractional ? place_fraction(pod.gpu_milli, out) : place_whole(pod.num_gpu, out);
    };
    if (attempt()) return true;
    if (grow_node_gpus < pod.num_gpu) return false;
    nodes_.push_back(NodeState{std::vector<int>(static_cast<size_t>(grow_node_gpus), 0), 0});
    total_gpus_ += grow_node_gpus;
    return attempt();
  }

  int total_gpus() const { return total_gpus_; }
  void set_total_gpus(int gpus) { total_gpus_ = gpus; }

  void remove(const Assignment& assignment) {
    auto& node = nodes_[static_cast<size_t>(assignment.node)];
    for (int g : assignment.gpus) node.used_milli[static_cast<size_t>(g)] -= assignment.milli;
    --node.pods;
    for (int g : assignment.gpus) {
      if (node.used_milli[static_cast<size_t>(g)] == 0) --gpus_used_;
    }
    if (node.pods == 0) --nodes_used_;
  }

  int gpus_used() const { return gpus_used_; }
  int nodes_used() const { return nodes_used_; }
  int64_t used_milli() const { return used_milli_total_; }
  void account(int64_t delta) { used_milli_total_ += delta; }

 private:
  bool place_fraction(int milli, Assignment& out) {
    int best_node = -1, best_gpu = -1, best_room = kWholeGpu + 1;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      const auto& used = nodes_[n].used_milli;
      for (size_t g = 0; g < used.size(); ++g) {
        const int room = kWholeGpu - used[g] - milli;
        if (room < 0) continue;
        if (strategy_ == PackingStrategy::kFirstFit) {
          return commit(static_cast<int>(n), {static_cast<int>(g)}, milli, out);
        }
        // Best fit: least room left; a GPU already in use beats an idle one on ties.
        if (room < best_room) {
          best_room = room;
          best_node = static_cast<int>(n);
          best_gpu = static_cast<int>(g);
        }
      }
    }
    if (best_node < 0) return false;
    return commit(best_node, {best_gpu}, milli, out);
  }

  bool place_whole(int count, Assignment& out) {
    int best_node = -1, best_free = 1 << 30;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      int idle = 0;
      for (int used : nodes_[n].used_milli) idle += used == 0 ? 1 : 0;
      if (idle < count) continue;
      if (strategy_ != PackingStrategy::kBestFit) {
        best_node = static_cast<int>(n);
        break;
      }
      if (idle < best_free) {  // best fit: the node left with the fewest idle GPUs
        best_free = idle;
        best_node = static_cast<int>(n);
      }
    }
    if (best_node < 0) return false;
    std::vector<int> chosen;
    const auto& used = nodes_[static_cast<size_t>(best_node)].used_milli;
    for (size_t g = 0; g < used.size() && static_cast<int>(chosen.size()) < count; ++g) {
      if (used[g] == 0) chosen.push_back(static_cast<int>(g));
    }
    return commit(best_node, chosen, kWholeGpu, out);
  }

  bool commit(int node_index, std::vector<int> gpus, int milli, Assignment& out) {
    auto& node = nodes_[static_cast<size_t>(node_index)];
    if (node.pods == 0) ++nodes_used_;
    ++node.pods;
    for (int g : gpus) {
      if (node.used_milli[static_cast<size_t>(g)] == 0) ++gpus_used_;
      node.used_milli[static_cast<size_t>(g)] += milli;
    }
    out = Assignment{node_index, std::move(gpus), milli};
    return true;
  }

  PackingStrategy strategy_;
  std::vector<NodeState> nodes_;
  int gpus_used_ = 0;
  int nodes_used_ = 0;
  int64_t used_milli_total_ = 0;
  int total_gpus_ = 0;
};

}  // namespace

std::vector<Pod> load_alibaba_pods(const std::string& path) {
  const auto table = csv::read(path, /*has_header=*/true);
  const size_t name = table.column("name");
  const size_t num_gpu = table.column("num_gpu");
  const size_t gpu_milli = table.column("gpu_milli");
  const size_t creation = table.column("creation_time");
  const size_t deletion = table.column("deletion_time");
  if (table.rows.empty()) csv::fail(path, 2, "at least one pod row after the header");
  csv::require_unique(table, name, "name");
  std::vector<Pod> pods;
  for (const auto& row : table.rows) {
    Pod pod;
    pod.name = row.fields[name];
    pod.num_gpu = static_cast<int>(csv::to_int_in(table, row, num_gpu, "num_gpu", 0, kMaxGpus));
    pod.gpu_milli =
        static_cast<int>(csv::to_int_in(table, row, gpu_milli, "gpu_milli", 0, 1000000));
    if (pod.num_gpu <= 0 || pod.gpu_milli <= 0) continue;  // CPU-only pod
    if (pod.gpu_milli > kWholeGpu || (pod.num_gpu > 1 && pod.gpu_milli != kWholeGpu)) {
      csv::fail(path, row.line, "gpu_milli in 1..1000, and 1000 for multi-GPU pods");
    }
    pod.creation_s = csv::to_double_in(table, row, creation, "creation_time", 0, kMaxSubmitSeconds);
    pod.deletion_s = csv::to_double_in(table, row, deletion, "deletion_time", 0, kMaxSubmitSeconds);
    if (pod.deletion_s < pod.creation_s) {
      csv::fail(path, row.line, "deletion_time >= creation_time");
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

std::vector<GpuNode> load_alibaba_nodes(const std::string& path) {
  const auto table = csv::read(path, /*has_header=*/true);
  const size_t name = table.column("sn");
  const size_t gpus = table.column("gpu");
  const size_t model = table.column("model");
  csv::require_unique(table, name, "sn");
  std::vector<GpuNode> nodes;
  for (const auto& row : table.rows) {
    const int count = static_cast<int>(csv::to_int_in(table, row, gpus, "gpu", 0, 1024));
    if (count == 0) continue;
    nodes.push_back(GpuNode{row.fields[name], count, row.fields[model]});
  }
  return nodes;
}

PackingResult simulate_packing(const std::vector<Pod>& pods, const std::vector<GpuNode>& nodes,
                               PackingStrategy strategy, const PackingOptions& options) {
  // Departures before arrivals at the same instant, then in trace order.
  struct Event {
    double time_s;
    bool arrival;
    size_t pod;
  };
  std::vector<Event> events;
  events.reserve(pods.size() * 2);
  for (size_t i = 0; i < pods.size(); ++i) {
    events.push_back({pods[i].creation_s, true, i});
    if (!options.all_resident) events.push_back({pods[i].deletion_s, false, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    return !a.arrival && b.arrival;
  });

  PackingResult result;
  result.strategy = strategy;
  result.scenario = !options.all_resident        ? "replay"
                    : options.grow_node_gpus > 0 ? "all-resident-unbounded"
                                                 : "all-resident";
  Packer packer(nodes, strategy);
  for (const auto& node : nodes) result.total_gpus += node.gpus;
  packer.set_total_gpus(result.total_gpus);
  std::vector<Assignment> assignments(pods.size());
  std::vector<bool> placed(pods.size(), false);
  double weighted_fragmentation = 0;
  double weighted_time = 0;
  double previous_time = events.empty() ? 0 : events.front().time_s;
  auto fragmentation = [&] {
    const int used = packer.gpus_used();
    return used == 0 ? 0.0
                     : 1.0 - static_cast<double>(packer.used_milli()) / (used * double{kWholeGpu});
  };
  for (const auto& event : events) {
    if (event.time_s > previous_time && packer.gpus_used() > 0) {
      weighted_fragmentation += fragmentation() * (event.time_s - previous_time);
      weighted_time += event.time_s - previous_time;
    }
    previous_time = event.time_s;
    const Pod& pod = pods[event.pod];
    if (event.arrival) {
      if (packer.place(pod, assignments[event.pod], options.grow_node_gpus)) {
        placed[event.pod] = true;
        // What the pod uses, not what it blocks: exclusive placement blocks a whole GPU.
        packer.account(int64_t{pod.gpu_milli} * pod.num_gpu);
        ++result.pods_placed;
        if (packer.gpus_used() > result.gpus_used_peak) {
          result.gpus_used_peak = packer.gpus_used();
          result.fragmentation_at_peak = fragmentation();
        }
        result.nodes_used_peak = std::max(result.nodes_used_peak, packer.nodes_used());
      } else {
        ++result.pods_rejected;
      }
    } else if (placed[event.pod]) {
      packer.account(-int64_t{pod.gpu_milli} * pod.num_gpu);
      packer.remove(assignments[event.pod]);
      placed[event.pod] = false;
    }
  }
  if (weighted_time > 0) result.fragmentation_mean = weighted_fragmentation / weighted_time;
  if (options.all_resident) result.fragmentation_mean = fragmentation();  // the final state
  result.total_gpus = packer.total_gpus();
  return result;
}

std::string strategy_name(PackingStrategy strategy) {
  switch (strategy) {
    case PackingStrategy::kExclusive:
      return "exclusive";
    case PackingStrategy::kFirstFit:
      return "first-fit";
    case PackingStrategy::kBestFit:
      return "best-fit-static";
  }
  return "?";
}

nlohmann::json packing_to_json(const std::vector<PackingResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    out.push_back({{"scenario", r.scenario},
                   {"strategy", strategy_name(r.strategy)},
                   {"gpus_used_peak", r.gpus_used_peak},
                   {"nodes_used_peak", r.nodes_used_peak},
                   {"fragmentation_mean", r.fragmentation_mean},
                   {"fragmentation_at_peak", r.fragmentation_at_peak},
                   {"pods_placed", r.pods_placed},
                   {"pods_rejected", r.pods_rejected},
                   {"total_gpus", r.total_gpus}});
  }
  return out;
}

void write_packing_table(const std::vector<PackingResult>& results, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "%-23s %-15s %9s %10s %9s %9s %7s %8s %8s\n", "SCENARIO",
                "STRATEGY", "GPUS_PEAK", "NODES_PEAK", "FRAG_MEAN", "FRAG_PEAK", "PLACED",
                "REJECTED", "FLEET");
  out << line;
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "%-23s %-15s %9d %10d %9.3f %9.3f %7lld %8lld %8d\n",
                  r.scenario.c_str(), strategy_name(r.strategy).c_str(), r.gpus_used_peak,
                  r.nodes_used_peak, r.fragmentation_mean, r.fragmentation_at_peak,
                  static_cast<long long>(r.pods_placed), static_cast<long long>(r.pods_rejected),
                  r.total_gpus);
    out << line;
  }
}

}  // namespace fleetscope::sharer
