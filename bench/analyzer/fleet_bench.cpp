// bench_fleet [DBS] [TRACE] [REPEATS]
//
// `fleetscope fleet` over DBS trace databases (default 20, each an import of TRACE, default the
// shared ResNet trace) with their findings stored (as `fleetscope analyze` leaves them), against
// two references measured in the same run: reading the GPU intervals (start, end, device, process
// of every kernel, copy and memset) of the same databases one after another, nothing else (issue
// 15's target: fleet within 2x of it while fleet read stored findings); and loading and analysing
// every capture (load_capture + analyze_capture, one after another), which fleet has done for
// every capture since the one rule for stored vs fresh findings (analyzer/analysis.h
// capture_findings(): stored findings are not read while the rows are there). Best of REPEATS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fleetscope/analyzer/analysis.h"
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
    // Store the findings as `fleetscope analyze` does.
    store::Reader reader(db);
    const auto result = analyzer::analyze_capture(analyzer::load_capture(reader, 1));
    store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
    for (const auto& f : result.findings) writer.add_finding(f);
    writer.finish();
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
  size_t jobs = 0;
  const double fleet = best_s(repeats, [&] { jobs = analyzer::rank_workflows(paths).size(); });
  std::printf("fleet over %d databases (%s each), best of %d\n", dbs,
              fs::path(trace).filename().c_str(), repeats);
  std::printf("  reference: read GPU intervals, one database after another  %8.3f s\n", reference);
  std::printf("  reference: load and analyse every capture, one after another %8.3f s\n", analysis);
  std::printf(
      "  fleetscope fleet (rank_workflows, every capture analysed now)  %8.3f s  (%zu jobs)\n",
      fleet, jobs);
  std::printf(
      "  ratio fleet / read GPU intervals: %.2fx, fleet / load and analyse: %.2fx   "
      "(checksum %lld)\n",
      fleet / reference, fleet / analysis,
      static_cast<long long>((sink + static_cast<int64_t>(findings)) % 1000));
  fs::remove_all(dir);
  return 0;
}
