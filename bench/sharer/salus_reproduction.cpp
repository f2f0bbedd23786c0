// Salus's headline experiments (Yu & Chowdhury, MLSys'20) replayed on fleetscope's model, on the
// closest workload definition in ../shared/data/jobs/. Prints the figures docs/sharer.md quotes.
//
// 1. SRTF vs exclusive FIFO, average JCT: the Tiresias 60-job trace with Salus's own workload
//    profiles, every job on one GPU (Salus's setting), one lane (lane manager off, as in its SRTF
//    experiment), switch cost 5 ms; and the same with the trace's real GPU counts on 8 GPUs.
// 2. Inference services on one 16 GiB GPU: one service per (model, smallest batch) profile, in
//    turn, P = the profile's persistent memory, T = its activations per sample (batch 1), until
//    no lane takes another; CUDA context counted once per GPU (Salus: one process) or once per
//    service (fleetscope: one process per job), against equal static slices.

#include <cstdio>
#include <map>
#include <string>

#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/policy.h"
#include "fleetscope/sharer/simulator.h"
#include "fleetscope/sharer/workload.h"

using namespace fleetscope::sharer;

namespace {

const std::string kJobs = std::string(FLEETSCOPE_SHARED_DATA) + "/jobs/";

void srtf_vs_fifo() {
  const auto profiles = load_salus_profiles(kJobs + "salus_workloads.csv");
  const auto trace = load_tiresias_jobs(kJobs + "tiresias_60_job.csv", profiles);
  struct Setting {
    const char* name;
    int gpus;
    bool single_gpu_jobs;
  };
  for (const Setting& setting : {Setting{"1 GPU, every job on one GPU", 1, true},
                                 Setting{"8 GPUs, real GPU counts", 8, false}}) {
    auto jobs = trace;
    if (setting.single_gpu_jobs) {
      for (auto& job : jobs) job.num_gpu = 1;
    }
    SimConfig config;
    config.gpus = setting.gpus;
    config.lanes = false;
    const auto fifo = simulate(jobs, FifoExclusivePolicy{}, config);
    const auto srtf = simulate(jobs, SrtfPolicy{}, config);
    config.lanes = true;
    const auto srtf_lanes = simulate(jobs, SrtfPolicy{}, config);
    std::printf(
        "SRTF vs FIFO (%s): FIFO %.1f s, SRTF %.1f s -> %.2fx; SRTF with lanes on "
        "%.1f s -> %.2fx\n",
        setting.name, fifo.avg_jct_s, srtf.avg_jct_s, fifo.avg_jct_s / srtf.avg_jct_s,
        srtf_lanes.avg_jct_s, fifo.avg_jct_s / srtf_lanes.avg_jct_s);
  }
}

void inference_services() {
  const auto profiles = load_salus_profiles(kJobs + "salus_workloads.csv");
  std::map<std::string, const WorkloadProfile*> smallest;
  for (const auto& profile : profiles.profiles) {
    auto& slot = smallest[profile.model];
    if (!slot || profile.batch_size < slot->batch_size) slot = &profile;
  }
  std::vector<MemoryDemand> services;
  for (const auto& [model, profile] : smallest) {
    const int64_t per_sample = profile->ephemeral_bytes / std::max(1, profile->batch_size);
    services.push_back(MemoryDemand{profile->persistent_bytes, per_sample, -1});
  }
  const int64_t capacity = 16 * kGiB;
  const int64_t context = 300 * kMiB;
  const SafetyMargin margin;
  const auto count = [&](int64_t per_service_context, int64_t reserved) {
    LaneAllocator gpu(capacity - reserved, margin);
    int64_t admitted = 0;
    for (size_t i = 0;; ++i) {
      MemoryDemand demand = services[i % services.size()];
      demand.persistent_bytes += per_service_context;
      if (!gpu.admit(static_cast<int64_t>(i), demand)) return admitted;
      ++admitted;
    }
  };
  const auto static_slices = [&](int64_t per_service_context, int64_t reserved) {
    int64_t largest = 0;
    for (auto demand : services) {
      demand.persistent_bytes += per_service_context;
      largest = std::max(largest, required_bytes_with(LaneLoad{}, demand, margin));
    }
    return (capacity - reserved) / largest;
  };
  std::printf("inference services on 16 GiB (%zu models in turn):\n", services.size());
  std::printf("  context once per GPU (Salus): lanes %lld, equal static slices %lld\n",
              static_cast<long long>(count(0, context)),
              static_cast<long long>(static_slices(0, context)));
  std::printf("  context per service (fleetscope): lanes %lld, equal static slices %lld\n",
              static_cast<long long>(count(context, 0)),
              static_cast<long long>(static_slices(context, 0)));
}

}  // namespace

int main() {
  srtf_vs_fifo();
  inference_services();
  return 0;
}
