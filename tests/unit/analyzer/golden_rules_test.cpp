// Golden per-rule checks on the real Kineto traces of tests/data. Each trace is imported with the
// real importer and analysed with every built-in rule; the verdicts and key numbers are compared
// with tests/data/golden_rules/expected.json, which tests/data/golden_rules/derive.py computes from
// the raw trace JSON without any of our C++ (see the README there). For each (rule, trace):
//   - the rule should not fire → it produced no finding ("no rule fires on a trace that lacks
//     its antipattern");
//   - the rule should fire → one finding per expected device, with the device and every pinned
//     number (evidence fields and impact_ns) equal — the importer and derive.py round the same
//     µs text to the same integer ns, so integers compare exactly; fractions within 1e-9.
// Tests are named GoldenRules.<rule>_<trace short name>.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

const std::vector<std::string> kRules = {"gpu_idle_gaps",
                                         "low_gpu_utilization",
                                         "launch_bound_small_kernels",
                                         "launch_delay_outliers",
                                         "dataloader_bottleneck",
                                         "pageable_memcpy",
                                         "sync_memcpy",
                                         "sync_memset",
                                         "excessive_sync",
                                         "memory_near_capacity",
                                         "consolidation_candidate",
                                         "comm_heavy",
                                         "tensor_cores_unused",
                                         "fusion_candidates",
                                         "exposed_transfers",
                                         "low_comm_overlap",
                                         "host_bound",
                                         "few_blocks",
                                         "low_occupancy",
                                         "tail_steps"};

// Trace file → short name (derive.py's SHORT_NAMES; the coverage test checks they agree).
const std::vector<std::pair<std::string, std::string>> kTraces = {
    {"hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", "amd_mi250"},
    {"hta-cpu_only_rank-34.json.gz", "cpu_only"},
    {"hta-critical_path_alexnet_trace.json.gz", "alexnet"},
    {"hta-critical_path_cuda_event_sync_event_sync_trace.json.gz", "event_sync"},
    {"hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
     "multi_stream_event_sync"},
    {"hta-critical_path_simple_add_trace.json.gz", "simple_add"},
    {"hta-cupti_profiler_trace.json.gz", "cupti_profiler"},
    {"hta-nccl_parser_config_nccl_data.json.gz", "nccl_data"},
    {"hta-ns_resolution_trace_rank-0.json.gz", "ns_resolution"},
    {"hta-rank_non_gpu_rank_non_gpu.json.gz", "rank_non_gpu"},
    {"hta-timeline_analysis_sampled_rank-0.json.gz", "timeline_rank0"},
    {"hta-trace_filter_sampled_rank-1.json.gz", "trace_filter_rank1"},
    {"hta-triton_example_triton_example.json.gz", "triton"},
    {"tb-gpu_metrics_input.json", "tb_gpu_metrics"},
};

std::string trace_path(const std::string& name) {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + name;
}

// expected.json lives in the source tree beside derive.py. The path comes from CMake, not __FILE__:
// __FILE__ is relative under compiler caches that rewrite paths (ccache base_dir).
std::filesystem::path expected_path() {
  return std::filesystem::path(FLEETSCOPE_GOLDEN_RULES_DIR) / "expected.json";
}

const json& expected() {
  static const json doc = [] {
    std::ifstream in(expected_path());
    if (!in) throw std::runtime_error("cannot read " + expected_path().string());
    return json::parse(in);
  }();
  return doc;
}

// Imports are cached across the test processes ctest starts (one per test): one database per
// trace in the temp directory, stamped with this executable's modification time so a rebuilt
// importer never reads a stale database. import_files() renames into place atomically, so
// concurrent tests at worst import twice. One folder per executable: the test binaries of two
// builds (dev and asan, a clean clone's) run at once on one machine, and each removes its own
// older stamps only (a shared folder had one build delete the other's import in progress).
std::string cached_database(const std::string& file, const std::string& short_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto exe_time = fs::last_write_time("/proc/self/exe", ec);
  std::error_code link_ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", link_ec).string();
  const fs::path dir = fs::temp_directory_path() / "fleetscope-golden-rules" /
                       std::to_string(std::hash<std::string>{}(exe));
  fs::create_directories(dir);
  const std::string stamp =
      ec ? std::to_string(::getpid()) : std::to_string(exe_time.time_since_epoch().count());
  const fs::path db = dir / (short_name + "-" + stamp + ".db");
  if (!fs::exists(db)) {
    // Older stamps of this trace only: a test process importing the same trace right now owns
    // files with this stamp (its temporary output, then the database and its timeline cache);
    // removing those made that import fail after every rebuild.
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(short_name + "-", 0) == 0 && name.rfind(short_name + "-" + stamp, 0) != 0)
        fs::remove(entry.path(), ec);
    }
    try {
      importers::import_files({trace_path(file)}, db.string(), {}, /*overwrite=*/true);
    } catch (const Error&) {
      // Another test process is importing the same trace into the same file (the importer
      // refuses a second concurrent writer): use its result once it is in place.
      for (int i = 0; i < 1200 && !fs::exists(db); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!fs::exists(db)) throw;
    }
  }
  return db.string();
}

struct Analyzed {
  CaptureData data;
  std::vector<store::Finding> findings;
};

const Analyzed& analyzed(const std::string& file, const std::string& short_name) {
  static std::map<std::string, std::unique_ptr<Analyzed>> cache;
  auto& slot = cache[file];
  if (!slot) {
    store::Reader reader(cached_database(file, short_name));
    slot = std::make_unique<Analyzed>();
    slot->data = load_capture(reader, resolve_capture_id(reader, std::nullopt));
    slot->findings = analyze(slot->data);
  }
  return *slot;
}

std::string describe(const store::Finding& f) {
  return f.rule + " on device " + (f.deviceId ? std::to_string(*f.deviceId) : "-") + ", impact " +
         std::to_string(f.impact_ns) + " ns, evidence " + f.evidence_json.substr(0, 400);
}

// Compares one rule's findings with its expected entry; returns the mismatches.
std::vector<std::string> mismatches(const json& want, std::vector<store::Finding> got) {
  std::vector<std::string> out;
  if (!want.at("fires").get<bool>()) {
    for (const auto& f : got)
      out.push_back("fired on a trace without its antipattern (derive.py: " +
                    want.value("why", std::string()) + "): " + describe(f));
    return out;
  }
  const json& findings = want.at("findings");
  if (got.size() != findings.size()) {
    out.push_back("expected " + std::to_string(findings.size()) + " finding(s), got " +
                  std::to_string(got.size()));
    return out;
  }
  // Both sides by device, the capture-wide finding (no device) first.
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) {
    return a.deviceId.value_or(-1) < b.deviceId.value_or(-1);
  });
  std::vector<json> sorted(findings.begin(), findings.end());
  std::sort(sorted.begin(), sorted.end(), [](const json& a, const json& b) {
    return (a["device"].is_null() ? -1 : a["device"].get<int>()) <
           (b["device"].is_null() ? -1 : b["device"].get<int>());
  });
  for (size_t k = 0; k < got.size(); ++k) {
    const store::Finding& f = got[k];
    const json& w = sorted[k];
    const json evidence = json::parse(f.evidence_json);
    const std::optional<int32_t> device =
        w["device"].is_null() ? std::nullopt : std::optional<int32_t>(w["device"].get<int32_t>());
    if (f.deviceId != device) out.push_back("device differs: " + describe(f));
    for (const auto& [key, value] : w.items()) {
      if (key == "device" || key == "info") continue;  // info: derive.py's notes, not pinned
      const json actual = key == "impact_ns" ? json(f.impact_ns) : evidence.value(key, json());
      bool same = false;
      if (value.is_number_float() && actual.is_number())
        same = std::fabs(value.get<double>() - actual.get<double>()) <= 1e-9;
      else if (value.is_number_integer() && actual.is_number_integer())
        same = value.get<int64_t>() == actual.get<int64_t>();
      else
        same = value == actual;
      if (!same)
        out.push_back(key + ": expected " + value.dump() + ", got " + actual.dump() + " (device " +
                      w["device"].dump() + ")");
    }
  }
  return out;
}

class GoldenRules : public ::testing::Test {
 public:
  GoldenRules(std::string file, std::string short_name, std::string rule)
      : file_(std::move(file)), short_(std::move(short_name)), rule_(std::move(rule)) {}

  void TestBody() override {
    // Missing reference data is a broken checkout, not a reason to pass.
    ASSERT_TRUE(std::filesystem::exists(trace_path(file_)))
        << "reference trace missing: " << trace_path(file_) << " (tests/data/README.md)";
    const json& want = expected().at("traces").at(file_).at("rules").at(rule_);
    const Analyzed& a = analyzed(file_, short_);
    std::vector<store::Finding> got;
    for (const auto& f : a.findings)
      if (f.rule == rule_) got.push_back(f);
    const auto wrong = mismatches(want, got);
    for (const auto& m : wrong) ADD_FAILURE() << rule_ << " on " << file_ << ": " << m;
  }

 private:
  std::string file_, short_, rule_;
};

[[maybe_unused]] const bool registered = [] {
  for (const auto& rule : kRules)
    for (const auto& [file, short_name] : kTraces)
      ::testing::RegisterTest(
          "GoldenRules", (rule + "_" + short_name).c_str(), nullptr, nullptr, __FILE__, __LINE__,
          [=]() -> GoldenRules* { return new GoldenRules(file, short_name, rule); });
  return true;
}();

// Column-pruned loading (`analyze DB --rules R` loads only what R reads, Rule::reads()) gives
// every rule, on every shared trace, the same outcome as loading everything: the same verdict,
// the same missing inputs, and findings equal field by field.
std::string outcome_text(const AnalysisResult& r) {
  std::string text;
  for (const RuleOutcome& o : r.rules)
    text += o.rule + (o.evaluated ? " evaluated " : " not evaluated: ") + o.not_evaluated_text() +
            " findings " + std::to_string(o.findings) + "\n";
  for (const store::Finding& f : r.findings) {
    text += f.rule + " " + f.severity + " device " +
            (f.deviceId ? std::to_string(*f.deviceId) : "-") + " impact " +
            std::to_string(f.impact_ns) + " " + f.evidence_json + " " + f.recommendation;
    text += " window " + std::to_string(f.window_start.value_or(-1)) + ".." +
            std::to_string(f.window_end.value_or(-1)) + "\n";
  }
  return text;
}

class PrunedLoading : public ::testing::Test {
 public:
  explicit PrunedLoading(std::string rule) : rule_(std::move(rule)) {}

  void TestBody() override {
    AnalyzeOptions options;
    options.rules = {rule_};
    const CaptureParts parts = parts_needed(options, /*with_summary=*/false);
    int pruned_rows = 0;
    for (const auto& [file, short_name] : kTraces) {
      ASSERT_TRUE(std::filesystem::exists(trace_path(file))) << trace_path(file);
      const Analyzed& full = analyzed(file, short_name);
      store::Reader reader(cached_database(file, short_name));
      const CaptureData pruned =
          load_capture(reader, resolve_capture_id(reader, std::nullopt), {}, parts);
      EXPECT_EQ(pruned.loaded, parts);
      EXPECT_EQ(outcome_text(analyze_capture(pruned, options)),
                outcome_text(analyze_capture(full.data, options)))
          << rule_ << " on " << file;
      // What was left out really was (when the trace has it).
      if (!parts.runtime) pruned_rows += static_cast<int>(full.data.runtime.size());
      if (!parts.cpu_ops) pruned_rows += static_cast<int>(full.data.cpu_ops.size());
      if (!parts.runtime) {
        EXPECT_EQ(pruned.runtime.size(), 0u);
      }
      if (!parts.cpu_ops) {
        EXPECT_TRUE(pruned.cpu_ops.empty());
      }
      if (!parts.memory_events) {
        EXPECT_TRUE(pruned.memory.empty());
      }
      EXPECT_EQ(pruned.gpu.size(), full.data.gpu.size());
    }
    if (!parts.runtime || !parts.cpu_ops) {
      EXPECT_GT(pruned_rows, 0) << rule_;
    }
  }

 private:
  std::string rule_;
};

[[maybe_unused]] const bool registered_pruned = [] {
  for (const auto& rule : kRules)
    ::testing::RegisterTest("PrunedLoading", rule.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [=]() -> PrunedLoading* { return new PrunedLoading(rule); });
  return true;
}();

TEST(PrunedLoadingParts, RulesReadLessThanEverythingAndTheSummaryReadsLaunches) {
  AnalyzeOptions gpu_only;
  gpu_only.rules = {"gpu_idle_gaps", "few_blocks"};
  EXPECT_EQ(parts_needed(gpu_only, false), CaptureParts::gpu_only());
  const CaptureParts with_summary = parts_needed(gpu_only);
  EXPECT_TRUE(with_summary.runtime && with_summary.gpu_syncs);
  EXPECT_FALSE(with_summary.cpu_ops || with_summary.memory_events || with_summary.dataloader_ops);
  EXPECT_EQ(parts_needed(AnalyzeOptions{}), CaptureParts::all());  // every rule: every part
  AnalyzeOptions unknown;
  unknown.rules = {"no_such_rule"};
  EXPECT_THROW(parts_needed(unknown), std::invalid_argument);
  // A capture loaded without a part a selected rule reads is refused, not analysed wrongly.
  CaptureData data;
  data.loaded = CaptureParts::gpu_only();
  AnalyzeOptions host;
  host.rules = {"host_bound"};
  EXPECT_THROW(analyze_capture(data, host), std::logic_error);
}

TEST(GoldenRulesCoverage, ExpectedJsonCoversEveryRuleAndTrace) {
  // The rule list is the registry's.
  std::set<std::string> registry;
  for (const auto& rule : RuleRegistry::builtin().rules()) registry.insert(rule->id());
  EXPECT_EQ(registry, std::set<std::string>(kRules.begin(), kRules.end()));
  EXPECT_EQ(kRules.size(), 20u);

  const json& traces = expected().at("traces");
  EXPECT_EQ(traces.size(), kTraces.size());
  for (const auto& [file, short_name] : kTraces) {
    ASSERT_TRUE(traces.contains(file)) << file;
    EXPECT_EQ(traces.at(file).at("short"), short_name) << file;
    for (const auto& rule : kRules) EXPECT_TRUE(traces.at(file).at("rules").contains(rule));
  }
  // Every rule is silent on at least one trace that has GPU events (the "lacks its
  // antipattern" half is exercised for every rule on real data).
  for (const auto& rule : kRules) {
    int silent = 0;
    for (const auto& [file, entry] : traces.items())
      silent += entry.at("gpu_events").get<int>() > 0 && !entry.at("rules").at(rule).at("fires");
    EXPECT_GT(silent, 0) << rule;
  }
}

}  // namespace
}  // namespace fleetscope::analyzer
