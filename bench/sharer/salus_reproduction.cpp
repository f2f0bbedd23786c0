// Salus's headline experiments (Yu & Chowdhury, MLSys'20) replayed on fleetscope's model, on the
// closest workload definition in tests/data/jobs/. Prints the figures docs/sharer.md quotes.
//
// 1. SRTF vs exclusive FIFO, average JCT: the Tiresias 60-job trace with Salus's own workload
//    profiles, every job on one GPU (Salus's setting), one lane (lane manager off, as in its SRTF
//    experiment), switch cost 5 ms; and the same with the trace's real GPU counts on 8 GPUs.
// 2. Inference services on one 16 GiB GPU: one service per (model, smallest batch) profile, in
//    turn, P = the profile's persistent memory, T = its activations per sample (batch 1), until
//    no lane takes another; CUDA context counted once per GPU (Salus: one process) or once per
//    service (fleetscope: one process per job), against equal static slices and against the MPS
//    model (a static slice and a context per client process, 16 clients per GPU before Volta, 48
//    from Volta on).
// 3. Hyper-parameter tuning: 300 trials of one model (its smallest batch), each one minute of
//    work alone, all submitted at once on one 16 GiB GPU; GPU utilization (useful GPU-seconds over
//    GPU-seconds) of lanes with PACK, and of the MPS model, against one trial at a time (exclusive
//    FIFO), for a sweep of the trials' utilization u (the data has none: see docs/sharer.md).
// Interference: the published default (Gavel's V100 pairs, fleetscope/sharer/interference.h).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/mps.h"
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
    config.interference = published_interference().model;
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
  // MPS: every service its own client process (its own context), its own slice of P + T + margin.
  const auto mps = [&](int clients) {
    LaneAllocator gpu(capacity, margin);
    int64_t admitted = 0;
    for (size_t i = 0;; ++i) {
      MemoryDemand demand = services[i % services.size()];
      demand.persistent_bytes += context;
      if (!gpu.admit(static_cast<int64_t>(i), demand, mps_admit_options(clients))) return admitted;
      ++admitted;
    }
  };
  const int64_t salus = count(0, context);
  const int64_t mps_pre_volta = mps(kMpsClientsPreVolta);
  const int64_t mps_volta = mps(kMpsClientsVolta);
  std::printf(
      "  MPS model (context and slice per client): %lld (%d clients, pre-Volta), %lld "
      "(%d clients, Volta+); Salus-style lanes / MPS = %.2fx\n",
      static_cast<long long>(mps_pre_volta), kMpsClientsPreVolta, static_cast<long long>(mps_volta),
      kMpsClientsVolta, static_cast<double>(salus) / static_cast<double>(mps_pre_volta));
}

void hyper_parameter_tuning() {
  const auto profiles = load_salus_profiles(kJobs + "salus_workloads.csv");
  const WorkloadProfile* resnet = nullptr;
  for (const auto& profile : profiles.profiles) {
    if (profile.model == "resnet50" && (!resnet || profile.batch_size < resnet->batch_size)) {
      resnet = &profile;
    }
  }
  if (!resnet) return;
  const int trials = 300;
  std::printf(
      "hyper-parameter tuning: %d x resnet50 batch %d (P %.0f MiB, T %.0f MiB, %.3f s per "
      "iteration), one minute each, one 16 GiB GPU, alpha %.4f (published):\n",
      trials, resnet->batch_size, static_cast<double>(resnet->persistent_bytes) / kMiB,
      static_cast<double>(resnet->ephemeral_bytes) / kMiB, resnet->iteration_s,
      published_interference().model.alpha);
  for (double utilization : {1.0, 0.909, 0.77, 0.5, 0.42, 0.3}) {
    std::vector<SimJob> jobs;
    for (int i = 0; i < trials; ++i) {
      SimJob job;
      job.id = i;
      job.name = "trial" + std::to_string(i);
      job.model = resnet->model;
      job.batch_size = resnet->batch_size;
      job.iteration_s = resnet->iteration_s;
      job.iterations = std::max<int64_t>(1, std::llround(60.0 / resnet->iteration_s));
      job.memory = MemoryDemand{resnet->persistent_bytes, resnet->ephemeral_bytes, -1};
      job.utilization = utilization;
      jobs.push_back(job);
    }
    SimConfig config;
    config.gpus = 1;
    config.interference = published_interference().model;
    config.lanes = false;
    const auto exclusive = simulate(jobs, FifoExclusivePolicy{}, config);
    config.lanes = true;
    const auto lanes = simulate(jobs, PackPolicy{}, config);
    config.mps_clients = kMpsClientsPreVolta;
    const auto mps = simulate(jobs, PackPolicy{}, config);
    std::printf(
        "  u %.3f: utilization exclusive %.3f, lanes+PACK %.3f (%.2fx), MPS model %.3f "
        "(%.2fx); makespan %.0f / %.0f / %.0f s\n",
        utilization, exclusive.gpu_utilization, lanes.gpu_utilization,
        lanes.gpu_utilization / exclusive.gpu_utilization, mps.gpu_utilization,
        mps.gpu_utilization / exclusive.gpu_utilization, exclusive.makespan_s, lanes.makespan_s,
        mps.makespan_s);
  }
}

}  // namespace

int main() {
  srtf_vs_fifo();
  inference_services();
  hyper_parameter_tuning();
  return 0;
}
