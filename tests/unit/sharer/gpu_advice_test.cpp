// The GPU-type advisor (issue 25, Ceer-style advice): the spec table's name matching, the
// classification of kernels by bound, the per-step breakdown on hand-computed activities, the
// prediction and the count for a deadline, and the check against Gavel's published step rates.

#include "fleetscope/sharer/gpu_advice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "fleetscope/sharer/commands.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

const GpuSpec& spec(const std::string& id) {
  static std::map<std::string, GpuSpec> cache;
  auto found = find_gpu_spec(id);
  EXPECT_TRUE(found) << id;
  return cache[id] = *found;
}

TEST(GpuSpecs, DeviceNamesMatchTheMostSpecificRow) {
  const std::map<std::string, std::string> expected = {
      {"Tesla V100-SXM2-32GB", "V100-SXM2"},
      {"Tesla V100-PCIE-16GB", "V100-PCIe"},
      {"Tesla P100-PCIE-16GB", "P100-PCIe"},
      {"Tesla P100-SXM2-16GB", "P100-SXM2"},
      {"Tesla K80", "K80"},
      {"Tesla T4", "T4"},
      {"NVIDIA A10", "A10"},
      {"NVIDIA A100-SXM4-40GB", "A100-40GB-SXM4"},
      {"NVIDIA A100-SXM4-80GB", "A100-80GB-SXM4"},
      {"NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"},
      {"NVIDIA A100-PCIE-40GB", "A100-40GB-PCIe"},
      {"NVIDIA L4", "L4"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA H100 80GB HBM3", "H100-SXM"},
      {"NVIDIA H100 PCIe", "H100-PCIe"},
      {"NVIDIA H200", "H200-SXM"},
      {"a100-80gb-sxm4", "A100-80GB-SXM4"},
  };
  for (const auto& [name, id] : expected) {
    const auto found = find_gpu_spec(name);
    ASSERT_TRUE(found) << name;
    EXPECT_EQ(found->id, id) << name;
  }
  EXPECT_FALSE(find_gpu_spec("Quadro RTX 6000"));
  EXPECT_FALSE(find_gpu_spec("AMD Instinct MI250X"));
  EXPECT_FALSE(find_gpu_spec(""));
  for (const auto& row : gpu_specs()) {
    EXPECT_GT(row.fp32_tflops, 0) << row.id;
    EXPECT_GE(row.fp16_matrix_tflops, row.fp32_tflops) << row.id;
    EXPECT_GT(row.memory_gbs, 0) << row.id;
    EXPECT_FALSE(row.source.empty()) << row.id;
    EXPECT_EQ(find_gpu_spec(row.id)->id, row.id) << "every id finds its own row";
  }
}

TEST(GpuAdvice, KernelsAreClassifiedByTheirBound) {
  const auto kernel = [](const std::string& name) {
    return classify_activity(ActivityKind::kernel, false, name);
  };
  EXPECT_EQ(kernel("volta_sgemm_128x64_nn"), WorkBound::fp32_compute);
  EXPECT_EQ(kernel("volta_scudnn_128x64_relu_interior_nn_v1"), WorkBound::fp32_compute);
  EXPECT_EQ(kernel("void cudnn::detail::implicit_convolve_sgemm<float, float>"),
            WorkBound::fp32_compute);
  EXPECT_EQ(kernel("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn"), WorkBound::tensor_compute);
  EXPECT_EQ(kernel("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn"),
            WorkBound::tensor_compute);
  EXPECT_EQ(kernel("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw"),
            WorkBound::tensor_compute);
  EXPECT_EQ(kernel("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>"),
            WorkBound::tensor_compute);
  EXPECT_EQ(kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor>"),
            WorkBound::memory);
  EXPECT_EQ(kernel("void cudnn::detail::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512>"),
            WorkBound::memory);
  EXPECT_EQ(kernel("void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4>"),
            WorkBound::memory);
  EXPECT_EQ(kernel("void splitKreduce_kernel<float, float, float, float>"), WorkBound::memory);
  EXPECT_EQ(classify_activity(ActivityKind::kernel, true, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            WorkBound::communication);
  EXPECT_EQ(classify_activity(ActivityKind::host_copy, false, "Memcpy HtoD"), WorkBound::host_copy);
  EXPECT_EQ(classify_activity(ActivityKind::device_copy, false, "Memcpy DtoD"), WorkBound::memory);
  EXPECT_EQ(classify_activity(ActivityKind::memset, false, "Memset"), WorkBound::memory);
}

// Two 100 ms steps on device 0. Step 1: an FP32 GEMM 10-50 ms and an elementwise kernel 40-60
// ms (they overlap 10 ms: busy 50 ms, split 40:20 by duration), idle 50 ms. Step 2: a kernel
// issued at 195 ms that runs 205-225 ms belongs to step 2 even though it starts after it; a
// kernel on device 1 is not device 0's.
CapturedWork hand_computed_work() {
  CapturedWork work;
  work.source = "hand";
  work.gpu_names = {{0, "Tesla V100-SXM2-16GB"}};
  work.names = {"volta_sgemm_128x64_nn", "vectorized_elementwise_kernel", "other"};
  const int64_t ms = 1'000'000;
  work.activities = {
      {10 * ms, 50 * ms, 5 * ms, 0, 0, ActivityKind::kernel, false},
      {40 * ms, 60 * ms, 6 * ms, 0, 1, ActivityKind::kernel, false},
      {205 * ms, 225 * ms, 195 * ms, 0, 1, ActivityKind::kernel, false},
      {120 * ms, 130 * ms, -1, 1, 2, ActivityKind::kernel, false},
  };
  work.steps = {{100 * ms, 200 * ms}, {0, 100 * ms}};
  return work;
}

TEST(GpuAdvice, StepsSplitTheGpuBusyTimeByBoundAndKeepTheIdleTime) {
  const WorkProfile profile = profile_work(hand_computed_work(), 0);
  ASSERT_EQ(profile.steps.size(), 2u);
  EXPECT_TRUE(profile.steps_from_capture);
  EXPECT_EQ(profile.gpu_name, "Tesla V100-SXM2-16GB");
  const auto& first = profile.steps[0];
  EXPECT_NEAR(first.step_s, 0.100, 1e-12);
  EXPECT_NEAR(first.idle_s, 0.050, 1e-12);
  EXPECT_NEAR(first.busy_s[static_cast<size_t>(WorkBound::fp32_compute)], 0.050 * 40 / 60, 1e-12);
  EXPECT_NEAR(first.busy_s[static_cast<size_t>(WorkBound::memory)], 0.050 * 20 / 60, 1e-12);
  const auto& second = profile.steps[1];
  EXPECT_NEAR(second.busy_s[static_cast<size_t>(WorkBound::memory)], 0.020, 1e-12);
  EXPECT_NEAR(second.idle_s, 0.080, 1e-12);

  // V100-SXM2 -> A100-40GB-SXM4: FP32 15.7 / 19.5, memory 900 / 1,555 GB/s.
  const GpuSpec& v100 = spec("V100-SXM2");
  const GpuSpec& a100 = spec("A100-40GB-SXM4");
  const double expected = 0.050 + 0.050 * 40 / 60 * 15.7 / 19.5 + 0.050 * 20 / 60 * 900 / 1555;
  EXPECT_NEAR(predict_step_s(first, v100, a100), expected, 1e-12);
  EXPECT_NEAR(predict_step_s(first, v100, v100), first.step_s, 1e-12);

  EXPECT_THROW(profile_work(hand_computed_work(), 7), std::runtime_error);
  EXPECT_EQ(busiest_device(hand_computed_work()), 0);
}

TEST(GpuAdvice, WithoutStepMarkersTheActiveSpanIsOneStep) {
  CapturedWork work = hand_computed_work();
  work.steps.clear();
  const WorkProfile profile = profile_work(work, 0);
  EXPECT_FALSE(profile.steps_from_capture);
  ASSERT_EQ(profile.steps.size(), 1u);
  EXPECT_NEAR(profile.steps[0].step_s, 0.215, 1e-12);  // 10 ms .. 225 ms
  EXPECT_NEAR(profile.steps[0].idle_s, 0.215 - 0.070, 1e-12);
}

// A job whose 1 s steps on a V100 are all FP32 compute: 36,000 steps (10 h on one V100) and a
// 1 h deadline, 1.5 GB of gradients all-reduced per step. By hand: H100-SXM steps take
// 15.7 / 67 s = 0.2343 s; 2 GPUs: 18,000 x (0.2343 + 1.5e9 / 450e9) = 4,278 s > 3,600 s; 3 GPUs:
// 12,000 x (0.2343 + 4/3 x 1.5e9 / 450e9) = 2,865 s. 8 V100s: 4,500 x (1 + 7/4 x 1.5e9 / 150e9)
// = 4,579 s: no V100 count meets the deadline.
TEST(GpuAdvice, TheFewestGpusOfEachTypeThatMeetTheDeadlineAndTheCheapestType) {
  WorkProfile profile;
  profile.source = "constructed";
  for (int i = 0; i < 10; ++i) {
    StepBreakdown step;
    step.step_s = 1.0;
    step.busy_s[static_cast<size_t>(WorkBound::fp32_compute)] = 1.0;
    profile.steps.push_back(step);
  }
  AdviceOptions options;
  options.targets = {"V100-SXM2", "H100-SXM", "A100-40GB-SXM4"};
  options.total_steps = 36000;
  options.deadline_h = 1.0;
  options.gradient_bytes = 1.5e9;
  const Advice advice = advise(profile, spec("V100-SXM2"), options);
  ASSERT_EQ(advice.types.size(), 3u);
  const TypeAdvice& v100 = advice.types[0];
  const TypeAdvice& h100 = advice.types[1];
  EXPECT_FALSE(v100.meets_deadline);
  EXPECT_EQ(v100.gpus, 8);  // the fastest count, to show by how much it misses
  EXPECT_NEAR(v100.hours * 3600, 4500 * (1 + 1.75 * 1.5e9 / 150e9), 1e-6);
  EXPECT_TRUE(h100.meets_deadline);
  EXPECT_EQ(h100.gpus, 3);
  EXPECT_NEAR(h100.mean_step_s, 15.7 / 67, 1e-12);
  EXPECT_NEAR(h100.hours * 3600, 12000 * (15.7 / 67 + 4.0 / 3 * 1.5e9 / 450e9), 1e-6);
  EXPECT_NEAR(h100.speedup, 67 / 15.7, 1e-9);

  // Without prices: the fewest GPUs that meet the deadline. A100: 15.7 / 19.5 = 0.805 s a step,
  // 6 GPUs: 6,000 x (0.805 + 5/3 x 1.5e9 / 300e9) = 4,880 s; 8: 4,500 x (0.805 + 7/4 x 5e-3)
  // = 3,662 s: the A100 misses too, so H100 is recommended.
  EXPECT_EQ(advice.recommended_id, "H100-SXM");
  EXPECT_FALSE(advice.types[2].meets_deadline);

  // With a looser deadline both A100 and H100 meet it; prices pick the cheaper in total.
  options.deadline_h = 1.1;
  options.price_per_gpu_hour = {{"H100-SXM", 10.0}, {"A100-40GB-SXM4", 1.0}};
  const Advice priced = advise(profile, spec("V100-SXM2"), options);
  EXPECT_TRUE(priced.types[2].meets_deadline);
  EXPECT_EQ(priced.types[2].gpus, 8);
  ASSERT_TRUE(priced.types[2].cost);
  EXPECT_NEAR(*priced.types[2].cost, 8 * priced.types[2].hours * 1.0, 1e-9);
  EXPECT_EQ(priced.recommended_id, "A100-40GB-SXM4");

  // Without the gradient size only one GPU per type is considered, and nothing meets 1 h.
  options.gradient_bytes = 0;
  options.deadline_h = 1.0;
  const Advice single = advise(profile, spec("V100-SXM2"), options);
  for (const auto& row : single.types) EXPECT_EQ(row.gpus, 1);
  EXPECT_TRUE(single.recommended_id.empty());
  EXPECT_NE(single.recommendation.find("--gradient-mib"), std::string::npos);
}

TEST(GpuAdvice, ImpossibleOptionsAreRefused) {
  WorkProfile profile;
  profile.steps.push_back(StepBreakdown{1.0, 1.0, {}});
  AdviceOptions options;
  options.targets = {"B200"};
  EXPECT_THROW(advise(profile, spec("V100-SXM2"), options), std::invalid_argument);
  options.targets.clear();
  options.deadline_h = std::nan("");
  EXPECT_THROW(advise(profile, spec("V100-SXM2"), options), std::invalid_argument);
  options.deadline_h = 0;
  options.price_per_gpu_hour = {{"H100-SXM", -1}};
  EXPECT_THROW(advise(profile, spec("V100-SXM2"), options), std::invalid_argument);
  options.price_per_gpu_hour.clear();
  options.max_gpus = 64;
  EXPECT_THROW(advise(profile, spec("V100-SXM2"), options), std::invalid_argument);
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Gavel's solo throughputs of 8 configurations on a P100 and a V100. The model's range for a
// step that is all GPU time is [memory-bound, FP32-bound] = [900 / 732, 15.7 / 9.3] =
// [1.230, 1.688]; Gavel measured 1.68x to 2.68x. The memory-bound end is a lower bound for every
// job; the FP32 end is exceeded by 7 of 8, by up to 37 % (ResNet-50 at batch 64).
TEST(GpuAdvice, PublishedCrossGpuStepRatesLieAboveTheMemoryBoundAndMostlyAboveTheComputeBound) {
  const std::string path = std::string(FLEETSCOPE_SHARER_DATA_DIR) + "/gavel_solo_throughputs.csv";
  const auto runs = parse_published_step_ratios(read_text(path), path);
  ASSERT_EQ(runs.size(), 8u);
  const auto checks = check_published_ratios(runs);
  size_t inside = 0;
  double worst = 0;
  for (const auto& check : checks) {
    EXPECT_NEAR(check.memory_bound_speedup, 900.0 / 732, 1e-12);
    EXPECT_NEAR(check.compute_bound_speedup, 15.7 / 9.3, 1e-12);
    EXPECT_GT(check.measured_speedup, check.memory_bound_speedup) << check.run.job;
    inside += check.error == 0 ? 1 : 0;
    worst = std::max(worst, check.error);
  }
  EXPECT_EQ(inside, 1u);
  EXPECT_EQ(checks[0].run.job, "ResNet-18 (batch size 16)");
  EXPECT_EQ(checks[0].error, 0);
  const double resnet50_64 = 5.4575999796347645 / 2.0376805014075785;
  EXPECT_NEAR(checks[3].error, (resnet50_64 - 15.7 / 9.3) / resnet50_64, 1e-12);
  EXPECT_NEAR(worst, checks[3].error, 1e-15);
}

TEST(GpuAdvice, PublishedRatesWithAnUnknownGpuNameTheLine) {
  const std::string text =
      "# comment\njob,from,to,from_steps_per_s,to_steps_per_s\nA,P100-PCIe,B200,1,2\n";
  try {
    parse_published_step_ratios(text, "rates.csv");
    FAIL() << "expected an error";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("rates.csv:3"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parse_published_step_ratios(
                   "job,from,to,from_steps_per_s,to_steps_per_s\nA,K80,T4,nan,2\n", "r.csv"),
               std::exception);
}

TEST(AdviseCommand, ListsValidatesAndRefusesBadFlags) {
  std::ostringstream out, err;
  EXPECT_EQ(run_advise_command({"--list-gpus"}, out, err), 0);
  EXPECT_NE(out.str().find("H100-SXM"), std::string::npos);
  EXPECT_NE(out.str().find("datasheet"), std::string::npos);

  out.str("");
  const std::string path = std::string(FLEETSCOPE_SHARER_DATA_DIR) + "/gavel_solo_throughputs.csv";
  EXPECT_EQ(run_advise_command({"--validate", path}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("1 of 8 measured speedups inside the model's range"), std::string::npos)
      << out.str();

  err.str("");
  EXPECT_EQ(run_advise_command({"trace.db", "--deadline-h", "5"}, out, err), 2);
  EXPECT_NE(err.str().find("need --steps"), std::string::npos) << err.str();
  err.str("");
  EXPECT_EQ(run_advise_command({"trace.db", "--price", "H100-SXM=-3"}, out, err), 2);
  EXPECT_NE(err.str().find("above 0"), std::string::npos) << err.str();
  EXPECT_EQ(run_advise_command({"trace.db", "--max-gpus", "16"}, out, err), 2);
  err.str("");
  EXPECT_EQ(run_advise_command({"--validate", "/nonexistent/rates.csv"}, out, err), 1);
  EXPECT_NE(err.str().find("cannot read /nonexistent/rates.csv: no such file"), std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace fleetscope::sharer
