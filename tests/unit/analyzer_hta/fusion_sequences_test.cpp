// Frequent kernel sequences (HTA get_frequent_cuda_kernel_sequences, kernel_sequences.h) feed the
// fusion rule's evidence and estimated saving, on a shared real trace (ns_resolution, ResNet-style
// steps with cuDNN convolutions and batch norms): the finding lists the repeated sequences with
// the most GPU time, each with the gaps between its kernels as the saving, exactly as the library
// computes them, and its recommendation names the top one.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/kernel_sequences.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

TEST(FusionSequences, RealTraceEvidenceIsTheLibrarysRepeatedSequencesByGpuTime) {
  const CaptureData data = load_trace_file(std::string(FLEETSCOPE_SHARED_DATA) +
                                           "/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz");
  KernelSequenceOptions options;
  options.outermost_per_chain = true;  // what the rule uses (kernel_sequences.h)
  std::vector<KernelSequence> repeated;
  for (KernelSequence& s : frequent_kernel_sequences(data, options))
    if (s.count >= 2) repeated.push_back(std::move(s));
  ASSERT_GE(repeated.size(), 5u) << "ns_resolution repeats its per-layer sequences every step";
  std::stable_sort(
      repeated.begin(), repeated.end(),
      [](const KernelSequence& a, const KernelSequence& b) { return a.gpu_ns > b.gpu_ns; });
  int64_t saving = 0;
  for (const KernelSequence& s : repeated) saving += s.gap_ns;

  AnalyzeOptions analyze_options;
  analyze_options.rules = {"fusion_candidates"};
  const auto findings = analyze(data, analyze_options);
  ASSERT_EQ(findings.size(), 1u) << "one GPU, runs of short kernels (golden_rules expected.json)";
  const json evidence = json::parse(findings[0].evidence_json);
  const json& sequences = evidence.at("frequent_sequences");
  ASSERT_EQ(sequences.size(), 5u) << "the five with most GPU time";
  for (size_t k = 0; k < sequences.size(); ++k) {
    SCOPED_TRACE("sequence " + std::to_string(k));
    EXPECT_EQ(sequences[k].at("op"), repeated[k].op);
    EXPECT_EQ(sequences[k].at("kernels").get<std::vector<std::string>>(), repeated[k].kernels);
    EXPECT_EQ(sequences[k].at("count"), repeated[k].count);
    EXPECT_EQ(sequences[k].at("gpu_ns"), repeated[k].gpu_ns);
    EXPECT_EQ(sequences[k].at("estimated_saving_ns"), repeated[k].gap_ns);
    EXPECT_GE(repeated[k].kernels.size(), 3u) << "HTA's min_pattern_len";
    if (k > 0) {
      EXPECT_GE(repeated[k - 1].gpu_ns, repeated[k].gpu_ns);
    }
  }
  EXPECT_EQ(evidence.at("frequent_sequences_saving_ns"), saving);
  EXPECT_GT(saving, 0) << "kernels of one op are not back to back on this trace";
  EXPECT_NE(findings[0].recommendation.find("under " + repeated[0].op), std::string::npos)
      << findings[0].recommendation;
}

}  // namespace
}  // namespace fleetscope::analyzer
