// bench_fleet [DBS] [TRACE] [REPEATS]
//
// `fleetscope fleet` over DBS trace databases (default 20, each an import of TRACE, default the
// shared ResNet trace), against two references measured in the same run: reading the GPU
// intervals (start, end, device, process of every kernel, copy and memset) of the same databases
// one after another, nothing else (issue 15's target: fleet within 2x of it); and loading and
// analysing every capture (load_capture + analyze_capture, one after another). Fleet is timed
// twice: on the databases as imported (no analysis cached: every capture is loaded and analysed,
// analyzer/analysis.h capture_findings()), then after `fleetscope analyze` has stored each
// capture's analysis under its key (analyzer/analysis_cache.h: fleet reads it back). Best of
// REPEATS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/analysis_cache.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fs = std::filesystem;
using namespace fleetscope;

namespace {

double best_s(int repeats, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int64_t read_gpu_intervals(const std::string& db) {
  store::Reader reader(db);
  int64_t sum = 0;
  for (const char* table :
       {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    auto stmt = reader.database().prepare(
        std::string("SELECT start, end, deviceId, globalPid FROM ") + table);
    while (stmt.step())
      sum += stmt.column_int(1) - stmt.column_int(0) + stmt.column_int(2) + stmt.column_int(3);
  }
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  const int dbs = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::string trace = argc > 2
                                ? argv[2]
                                : std::string(FLEETSCOPE_SHARED_DATA) +
                                      "/traces/kineto/hta-nccl_parser_config_nccl_data.json.gz";
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  if (!fs::exists(trace)) {
    std::fprintf(stderr, "bench_fleet: %s not found (shared data missing); skipping\n",
                 trace.c_str());
    return 0;
  }
  const fs::path dir = fs::temp_directory_path() / "fleetscope-bench-fleet";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::string> paths;
  for (int i = 0; i < dbs; ++i) {
    const std::string db = (dir / ("job" + std::to_string(i) + ".db")).string();
    importers::ImportOptions options;
    options.workflow_name = "job" + std::to_string(i);
    importers::import_files({trace}, db, options);
    paths.push_back(db);
  }
  int64_t sink = 0;
  const double reference = best_s(repeats, [&] {
    for (const auto& p : paths) sink += read_gpu_intervals(p);
  });
  size_t findings = 0;
  const double analysis = best_s(repeats, [&] {
    for (const auto& p : paths) {
      store::Reader reader(p);
      findings += analyzer::analyze_capture(analyzer::load_capture(reader, 1)).findings.size();
    }
  });
  std::vector<analyzer::WorkflowWaste> cold_ranking;
  const double cold = best_s(repeats, [&] { cold_ranking = analyzer::rank_workflows(paths); });
  // Store each capture's analysis as `fleetscope analyze` does (the daemon does the same when a
  // window closes): the findings and the cache entry under the capture's key.
  for (const auto& db : paths) {
    store::Reader reader(db);
    analyzer::AnalysisResult result =
        analyzer::capture_findings(analyzer::load_capture(reader, 1), &reader);
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    analyzer::store_analysis(writer, 1, result);
    writer.finish();
  }
  std::vector<analyzer::WorkflowWaste> cached_ranking;
  const double cached = best_s(repeats, [&] { cached_ranking = analyzer::rank_workflows(paths); });
  // The cache must not change the answer: the same jobs with the same findings impact.
  bool same = cold_ranking.size() == cached_ranking.size();
  for (size_t i = 0; same && i < cold_ranking.size(); ++i)
    same = cold_ranking[i].workflow == cached_ranking[i].workflow &&
           cold_ranking[i].findings_impact_ns == cached_ranking[i].findings_impact_ns &&
           cold_ranking[i].top_rule == cached_ranking[i].top_rule;
  if (!same) {
    std::fprintf(stderr, "bench_fleet: the cached ranking differs from the analysed one\n");
    return 1;
  }
  std::printf("fleet over %d databases (%s each), best of %d\n", dbs,
              fs::path(trace).filename().c_str(), repeats);
  std::printf("  reference: read GPU intervals, one database after another    %8.3f s\n",
              reference);
  std::printf("  reference: load and analyse every capture, one after another %8.3f s\n", analysis);
  std::printf("  fleet, no analysis cached (every capture analysed now)      %8.3f s  (%zu jobs)\n",
              cold, cold_ranking.size());
  std::printf("  fleet, analyses cached by `analyze` (read back under key)   %8.3f s  (%zu jobs)\n",
              cached, cached_ranking.size());
  std::printf(
      "  ratio to read GPU intervals: fleet uncached %.2fx, fleet cached %.2fx; "
      "fleet uncached / load and analyse %.2fx   (checksum %lld)\n",
      cold / reference, cached / reference, cold / analysis,
      static_cast<long long>((sink + static_cast<int64_t>(findings)) % 1000));
  fs::remove_all(dir);
  return 0;
}
