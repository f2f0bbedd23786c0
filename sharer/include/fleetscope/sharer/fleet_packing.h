#pragma once
// Fleet-scale packing of fractional GPU requests (the Alibaba 2023 "openb" pod list on its GPU
// node list). A fractional pod asks for gpu_milli thousandths of one GPU. This is static
// partitioning by compute share, the model of the trace's own scheduler (Weng et al., ATC'23):
// a pod holds its share for its whole life and sum(gpu_milli) <= 1000 per GPU. It is not memory
// lanes (the trace has no memory per pod and no iterations); the lane model of these pods is
// the simulator's (jobs_from_pods + simulate).
// Pods arrive at creation_time and leave at deletion_time; whole-GPU pods need num_gpu free GPUs
// on one node.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace fleetscope::sharer {

struct Pod {
  std::string name;
  int num_gpu = 0;
  int gpu_milli = 0;  // per GPU; < 1000 only when num_gpu == 1
  double creation_s = 0;
  double deletion_s = 0;
};

struct GpuNode {
  std::string name;
  int gpus = 0;
  std::string model;
};

enum class PackingStrategy {
  kExclusive,  // every pod gets whole GPUs, first fit
  kFirstFit,   // fractional pods share GPUs; first GPU (in node order) with room
  kBestFit,    // fractional pods share GPUs; the GPU left with the least compute share (static)
};

struct PackingOptions {
  // Ignore deletion times: every pod stays, so the question becomes "how many GPUs does the
  // whole pod list need at once" (the setting of Weng et al.'s fragmentation study).
  bool all_resident = false;
  // > 0: when no node has room, add another node of this many GPUs (an unbounded fleet), so the
  // result is the number of GPUs needed instead of a count of rejected pods.
  int grow_node_gpus = 0;
};

struct PackingResult {
  PackingStrategy strategy = PackingStrategy::kBestFit;
  std::string scenario;    // "replay", "all-resident", "all-resident-unbounded"
  int gpus_used_peak = 0;  // GPUs holding at least one pod, at the busiest moment
  int nodes_used_peak = 0;
  // Share of the capacity of occupied GPUs left unused (time-weighted mean, and at the peak).
  double fragmentation_mean = 0;
  double fragmentation_at_peak = 0;
  int64_t pods_placed = 0;
  int64_t pods_rejected = 0;  // no room anywhere when they arrived
  int total_gpus = 0;         // GPUs in the fleet at the end (grows when unbounded)
};

// Pods without GPUs are skipped. Throws std::runtime_error naming file and line on bad input.
std::vector<Pod> load_alibaba_pods(const std::string& path);
std::vector<GpuNode> load_alibaba_nodes(const std::string& path);

PackingResult simulate_packing(const std::vector<Pod>& pods, const std::vector<GpuNode>& nodes,
                               PackingStrategy strategy, const PackingOptions& options = {});

std::string strategy_name(PackingStrategy strategy);
nlohmann::json packing_to_json(const std::vector<PackingResult>& results);
void write_packing_table(const std::vector<PackingResult>& results, std::ostream& out);

}  // namespace fleetscope::sharer
