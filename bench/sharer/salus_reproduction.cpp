// Salus's headline experiments (Yu & Chowdhury, MLSys'20) replayed on fleetscope's model, on the
// closest workload definition in tests/data/jobs/. Prints the figures docs/sharer.md quotes.
//
// 1. SRTF vs exclusive FIFO, average JCT: the Tiresias 60-job trace with Salus's own workload
//    profiles, every job on one GPU (Salus's setting), one lane (lane manager off, as in its SRTF
//    experiment), switch cost 5 ms; exact SRTF with the CUDA context per job (fleetscope) and once
//    per GPU (Salus: one process), and Salus's own trace-run scheduler (salus-preempt:
//    benchmarks/exps/card249.py, at most 11 jobs, memory paged to host, the newest job runs);
//    and the same with the trace's real GPU counts on 8 GPUs.
// 2. Inference services on one 16 GiB GPU: one service per (model, smallest batch) profile, in
//    turn, T = its activations per sample (batch 1), until no lane takes another. P either the
//    profile's training footprint (weights, gradients, optimizer state) or the weights alone
//    (Salus's card270 runs inference: parameter counts below), in lanes or in one lane (card270
//    turns the lane manager off); CUDA context counted once per GPU (Salus: one process) or once
//    per service (fleetscope: one process per job), against equal static slices and against the
//    MPS model (a static slice and a context per client process, 16 clients per GPU before
//    Volta, 48 from Volta on).
// 3. Hyper-parameter tuning: 300 trials of one model (its smallest batch), each one minute of
//    work alone, all submitted at once on one 16 GiB GPU; GPU utilization (useful GPU-seconds over
//    GPU-seconds) of lanes with PACK, of Fluid-style water-filling and of the MPS model, against
//    one trial at a time (exclusive FIFO), for a sweep of the trials' utilization u (the data has
//    none: see docs/sharer.md); and the same study on 8 GPUs (makespan: Fluid's question).
// Interference: the published default (no model: the Gavel pairs are not fitted, see
// fleetscope/sharer/interference.h).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "fleetscope/sharer/hpo.h"
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
    // Salus: one process holds one context per GPU, whatever the number of jobs.
    SimConfig salus = config;
    salus.lanes = false;
    salus.memory.context_bytes = 0;
    salus.gpu_capacity_bytes -= 300 * kMiB;
    const auto srtf_one_context = simulate(jobs, SrtfPolicy{}, salus);
    const auto preempt = simulate(jobs, SalusPreemptPolicy{}, salus);
    std::printf(
        "SRTF vs FIFO (%s): FIFO %.1f s, SRTF %.1f s -> %.2fx; SRTF with lanes on "
        "%.1f s -> %.2fx; SRTF, context once per GPU %.1f s -> %.2fx; salus-preempt "
        "%.1f s -> %.2fx\n",
        setting.name, fifo.avg_jct_s, srtf.avg_jct_s, fifo.avg_jct_s / srtf.avg_jct_s,
        srtf_lanes.avg_jct_s, fifo.avg_jct_s / srtf_lanes.avg_jct_s, srtf_one_context.avg_jct_s,
        fifo.avg_jct_s / srtf_one_context.avg_jct_s, preempt.avg_jct_s,
        fifo.avg_jct_s / preempt.avg_jct_s);
  }
}

// Parameters of the profiles' models, for inference services' weights (4 bytes each):
// torchvision's model documentation (num_params) for AlexNet, GoogLeNet, Inception v3, ResNet-50/
// 101/152 and VGG-11/16/19; timm's inception_v4 model card (42.7 M); OverFeat's fast model
// (Sermanet et al., ICLR 2014: about 145 M).
const std::map<std::string, double> kParameters{
    {"alexnet", 61100840},   {"googlenet", 6624904},  {"inception3", 27161264},
    {"inception4", 42.7e6},  {"overfeat", 145e6},     {"resnet50", 25557032},
    {"resnet101", 44549160}, {"resnet152", 60192808}, {"vgg11", 132863336},
    {"vgg16", 138357544},    {"vgg19", 143667240}};

void inference_services() {
  const auto profiles = load_salus_profiles(kJobs + "salus_workloads.csv");
  std::map<std::string, const WorkloadProfile*> smallest;
  for (const auto& profile : profiles.profiles) {
    auto& slot = smallest[profile.model];
    if (!slot || profile.batch_size < slot->batch_size) slot = &profile;
  }
  std::vector<MemoryDemand> services;
  std::vector<MemoryDemand> weights_only;
  for (const auto& [model, profile] : smallest) {
    const int64_t per_sample = profile->ephemeral_bytes / std::max(1, profile->batch_size);
    services.push_back(MemoryDemand{profile->persistent_bytes, per_sample, -1});
    const auto parameters = kParameters.find(model);
    if (parameters == kParameters.end()) continue;
    weights_only.push_back(
        MemoryDemand{static_cast<int64_t>(4 * parameters->second), per_sample, -1});
  }
  const int64_t capacity = 16 * kGiB;
  const int64_t context = 300 * kMiB;
  const SafetyMargin margin;
  // The memory model charges each service's context (memory_model.h) outside its lane.
  // `single_lane`: one lane that grows as services join (Salus with its lane manager off).
  const auto admits = [&](const std::vector<MemoryDemand>& kinds, int64_t per_service_context,
                          int64_t reserved, bool single_lane) {
    LaneAllocator gpu(capacity - reserved, MemoryModel{margin, per_service_context});
    AdmitOptions options;
    if (single_lane) options.max_lanes = 1;
    int64_t admitted = 0;
    for (size_t i = 0;; ++i) {
      if (!gpu.admit(static_cast<int64_t>(i), kinds[i % kinds.size()], options)) return admitted;
      ++admitted;
    }
  };
  const auto count = [&](int64_t per_service_context, int64_t reserved) {
    return admits(services, per_service_context, reserved, false);
  };
  const auto static_slices = [&](int64_t per_service_context, int64_t reserved) {
    const MemoryModel model{margin, per_service_context};
    int64_t largest = 0;
    for (const auto& demand : services)
      largest = std::max(largest, model.own_lane_gpu_bytes(demand));
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
    LaneAllocator gpu(capacity, MemoryModel{margin, context});
    int64_t admitted = 0;
    for (size_t i = 0;; ++i) {
      const MemoryDemand demand = services[i % services.size()];
      if (!gpu.admit(static_cast<int64_t>(i), demand, mps_admit_options(clients))) return admitted;
      ++admitted;
    }
  };
  // Salus card270's setting: batch-1 inference services with their weights as P, all in one
  // lane (lane manager off), one process (one context). Salus ran 42 of them (14 models x 3
  // instances, benchmarks/exps/card270.py); how many fit is what the model can answer.
  const auto one_lane = [&](const std::vector<MemoryDemand>& kinds, int64_t per_service_context,
                            int64_t reserved) {
    return admits(kinds, per_service_context, reserved, true);
  };
  const auto lanes_of = [&](const std::vector<MemoryDemand>& kinds, int64_t per_service_context,
                            int64_t reserved) {
    return admits(kinds, per_service_context, reserved, false);
  };
  std::printf(
      "  weights-only P (%zu models), context once per GPU: one lane (Salus card270) %lld, lanes "
      "%lld; Salus ran 42\n",
      weights_only.size(), static_cast<long long>(one_lane(weights_only, 0, context)),
      static_cast<long long>(lanes_of(weights_only, 0, context)));
  std::printf(
      "  weights-only P, context per service: one lane %lld, lanes %lld; training P, one lane, "
      "context once: %lld\n",
      static_cast<long long>(one_lane(weights_only, context, 0)),
      static_cast<long long>(lanes_of(weights_only, context, 0)),
      static_cast<long long>(one_lane(services, 0, context)));
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
      "iteration), one minute each, one 16 GiB GPU, alpha %.4f (published default):\n",
      trials, resnet->batch_size, static_cast<double>(resnet->persistent_bytes) / kMiB,
      static_cast<double>(resnet->ephemeral_bytes) / kMiB, resnet->iteration_s,
      published_interference().model.alpha);
  for (double utilization : {1.0, 0.909, 0.77, 0.5, 0.42, 0.3}) {
    const auto jobs = hpo_trials(*resnet, trials, 60.0, utilization);
    SimConfig config;
    config.gpus = 1;
    config.interference = published_interference().model;
    const auto one_gpu = compare_hpo(jobs, config);
    config.lanes = true;
    config.mps_clients = kMpsClientsPreVolta;
    const auto mps = simulate(jobs, PackPolicy{}, config);
    const double exclusive = one_gpu.one_per_gpu.gpu_utilization;
    std::printf(
        "  u %.3f, 1 GPU: utilization exclusive %.3f, lanes+PACK %.3f (%.2fx), water-filling "
        "%.3f (%.2fx), MPS model %.3f (%.2fx); makespan %.0f / %.0f / %.0f / %.0f s\n",
        utilization, exclusive, one_gpu.pack.gpu_utilization,
        one_gpu.pack.gpu_utilization / exclusive, one_gpu.waterfill.gpu_utilization,
        one_gpu.waterfill.gpu_utilization / exclusive, mps.gpu_utilization,
        mps.gpu_utilization / exclusive, one_gpu.one_per_gpu.makespan_s, one_gpu.pack.makespan_s,
        one_gpu.waterfill.makespan_s, mps.makespan_s);
    // Fluid's setting: a study spread over several GPUs.
    SimConfig eight;
    eight.gpus = 8;
    eight.interference = published_interference().model;
    const auto spread = compare_hpo(jobs, eight);
    std::printf(
        "  u %.3f, 8 GPUs: makespan one per GPU %.0f s, PACK %.0f s (%.2fx), water-filling "
        "%.0f s (%.2fx); utilization %.3f / %.3f / %.3f\n",
        utilization, spread.one_per_gpu.makespan_s, spread.pack.makespan_s,
        spread.one_per_gpu.makespan_s / spread.pack.makespan_s, spread.waterfill.makespan_s,
        spread.one_per_gpu.makespan_s / spread.waterfill.makespan_s,
        spread.one_per_gpu.gpu_utilization, spread.pack.gpu_utilization,
        spread.waterfill.gpu_utilization);
  }
}

}  // namespace

int main() {
  srtf_vs_fifo();
  inference_services();
  hyper_parameter_tuning();
  return 0;
}
