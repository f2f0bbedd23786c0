#pragma once
// GPU-type advice in the manner of Ceer (Hafeez and Gandhi, "Empirical Analysis and Modeling of
// Compute Times of CNN Operations on AWS Cloud", IISWC 2020: operation-level models, heavy GPU
// operations (convolutions, matrix products) apart from light GPU and CPU operations, and a
// communication term from the model's parameter count for multi-GPU training; it picks the GPU
// instance and count that minimise training time or cost). Here: from one capture's per-kernel
// times on the GPU it ran on, estimate the step time on other GPU types and recommend a type and
// a count for a deadline or a budget. Ceer fits regressions per GPU type to its own measurements;
// without those, this model scales by public spec figures (gpu_specs.h).
//
// The model (documented in docs/sharer.md, "GPU-type advice"):
//  - every GPU activity of a step belongs to one class: tensor-core matrix kernels and other
//    matrix/convolution kernels are compute-bound (scaled by the FP16-matrix resp. FP32 FLOP/s
//    ratio), every other kernel, device-to-device copy and memset is memory-bound (scaled by the
//    DRAM bandwidth ratio), host copies scale by the PCIe ratio, NCCL kernels are kept as measured
//    (they depend on the job's topology, not on one GPU);
//  - the GPU's busy time in the step (the union of its activities) is split among the classes in
//    proportion to their summed durations; the step's idle time (host work, launch gaps, input
//    pipeline) is kept as measured: step' = idle + sum_c busy_c * rate_c(from) / rate_c(to);
//  - k GPUs of one type train data-parallel: k times the samples per step, so steps / k steps,
//    each longer by a ring all-reduce of the gradients, 2 (k - 1) / k * gradient bytes / the
//    type's peer link (NCCL's bus-bandwidth relation, nccl-tests doc/PERFORMANCE.md). Counts above
//    one need the gradient size; one node (at most 8 GPUs) is modelled.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "fleetscope/sharer/gpu_specs.h"

namespace fleetscope::sharer {

enum class WorkBound { tensor_compute, fp32_compute, memory, host_copy, communication };
inline constexpr size_t kWorkBounds = 5;
const char* to_string(WorkBound bound);

// What the advisor reads from a capture (filled by the CLI from the analyzer's loaded capture, so
// the sharer does not depend on the analyzer).
enum class ActivityKind { kernel, host_copy, device_copy, memset };
struct CapturedActivity {
  int64_t start_ns = 0, end_ns = 0;
  int64_t issued_ns = -1;  // start of the launching API call, -1 when unknown
  int32_t device = 0;
  uint32_t name = 0;  // index into CapturedWork::names
  ActivityKind kind = ActivityKind::kernel;
  bool communication = false;  // an NCCL collective (the analyzer's COMMUNICATION class)
};
struct CapturedWork {
  std::string source;                        // "FILE#captureN", for messages
  std::map<int32_t, std::string> gpu_names;  // TARGET_INFO_GPU.name by device
  std::vector<std::string> names;
  std::vector<CapturedActivity> activities;
  std::vector<std::pair<int64_t, int64_t>> steps;  // CPU step intervals [start, end)
};

// The class of one activity, from its kind and kernel name (rules in gpu_advice.cpp).
WorkBound classify_activity(ActivityKind kind, bool communication, const std::string& name);

struct StepBreakdown {
  double step_s = 0;
  double idle_s = 0;                // step minus the GPU's busy time
  double busy_s[kWorkBounds] = {};  // busy time split by class
};
struct KernelShare {
  std::string name;
  WorkBound bound = WorkBound::memory;
  double total_s = 0;
  int64_t count = 0;
};
struct WorkProfile {
  std::string source;
  int32_t device = 0;
  std::string gpu_name;
  bool steps_from_capture = true;  // false: no steps, the GPU's active span taken as one
  std::vector<StepBreakdown> steps;
  std::vector<KernelShare> top_kernels;  // by total time, at most 12
};
// One device's steps. A GPU activity belongs to the step in which it was issued (its launching
// call's start), else in which it started. Throws std::runtime_error naming the source when the
// device has no GPU activity.
WorkProfile profile_work(const CapturedWork& work, int32_t device);
// The device with the most GPU-busy time (the one to advise on by default); -1 when none.
int32_t busiest_device(const CapturedWork& work);

// The predicted time of one step on `to` for a step measured on `from`.
double predict_step_s(const StepBreakdown& step, const GpuSpec& from, const GpuSpec& to);
// The factor on one class's time moving from `from` to `to` (1 for communication).
double bound_ratio(WorkBound bound, const GpuSpec& from, const GpuSpec& to);

struct AdviceOptions {
  std::vector<std::string> targets;                  // spec ids; empty: every type of the table
  int64_t total_steps = 0;                           // 0: per-step predictions only
  double deadline_h = 0;                             // 0: none
  double budget = 0;                                 // 0: none (same currency as the prices)
  std::map<std::string, double> price_per_gpu_hour;  // by spec id
  double gradient_bytes = 0;                         // 0: counts above one are not modelled
  int max_gpus = 8;                                  // one node
};

struct TypeAdvice {
  GpuSpec spec;
  double mean_step_s = 0, p99_step_s = 0;  // one GPU
  double speedup = 1;                      // measured mean step / predicted mean step
  int gpus = 1;                            // the count chosen for the deadline / budget
  double step_s_at_count = 0;              // with the all-reduce of that count
  double hours = 0;                        // total_steps on that count; 0 without total_steps
  std::optional<double> cost;              // gpus * hours * price, when priced
  bool meets_deadline = true;
  bool within_budget = true;
  std::string note;
};
struct Advice {
  WorkProfile profile;
  GpuSpec from;
  double measured_mean_step_s = 0, measured_p99_step_s = 0;
  double share_of_step[kWorkBounds + 1] = {};  // classes, then idle, over the summed steps
  std::vector<TypeAdvice> types;
  std::string recommendation;  // one line: type, count and why
  std::string recommended_id;  // empty when nothing meets the constraints
};
// Throws std::invalid_argument for an unknown target id or a price/deadline that is not finite
// and positive.
Advice advise(const WorkProfile& profile, const GpuSpec& from, const AdviceOptions& options);

nlohmann::json advice_to_json(const Advice& advice);
void write_advice_table(const Advice& advice, std::ostream& out);

// Validation against published cross-GPU step times: a job's throughput measured alone on two
// GPU types (Gavel's oracle throughputs: sharer/data/gavel_solo_throughputs.csv). With no trace
// of those jobs, the check is the model's range: a job whose steps are all GPU time lies between
// the memory-bound and the compute-bound ratio of the two types' figures; `error` is how far the
// measured ratio lies outside that range (0 inside), relative to the measured ratio.
struct PublishedStepRatio {
  std::string job;
  std::string from, to;  // spec ids
  double from_steps_per_s = 0, to_steps_per_s = 0;
  std::string source;
};
std::vector<PublishedStepRatio> parse_published_step_ratios(const std::string& text,
                                                            const std::string& source);
struct RatioCheck {
  PublishedStepRatio run;
  double measured_speedup = 1;       // to over from, in steps per second
  double memory_bound_speedup = 1;   // the model's speedup for an all-memory-bound step
  double compute_bound_speedup = 1;  // ... for an all-FP32-compute-bound step
  double error = 0;                  // distance outside [min, max] over the measured speedup
};
std::vector<RatioCheck> check_published_ratios(const std::vector<PublishedStepRatio>& runs);

}  // namespace fleetscope::sharer
