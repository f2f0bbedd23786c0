// bench_import_scale [--events N]... [--repeat R] [--source TRACE] [--dir DIR] [--budget BYTES]
//
// Kineto import at scale: synthetic traces of N events (default 1e5 and 1e6; add --events
// 10000000 for the 4 GB case) made by replicating a real ResNet trace from the shared data
// (bench/importers/synthetic_trace.h) into DIR (default /tmp; never committed), then, each phase
// in its own child process (so peak RSS is per phase):
//   parse limit   reading + splitting + simdjson On-Demand over every event field, no rows
//                 (the importer's tokenizer with an empty callback);
//   insert limit  store::Writer inserting the same number of rows as the import stores (the
//                 source trace's rows replayed with shifted times), same indexes; run with the
//                 import's writer settings (importers::import_writer_options()) and with the
//                 Writer's defaults (65,536-row transactions), the faster of the two is the limit;
//   import        fleetscope's import of the file into a new database (import_files()).
// Each phase runs R times (--repeat, default 5), the phases interleaved round by round so a slow
// spell of the machine falls on all of them; the medians are reported. The insert and import
// times are taken inside the child around the work itself (the insert's replay, import_files()),
// so neither carries the fork and the process teardown; the parse limit is the child's wall time.
// Reported: wall time, events/s, CPU/wall (how many cores worked), peak RSS, and the ratio
// import / max(parse limit, insert limit): 1.0 would be a perfect overlap of the two.
// --files K (with --events N): K copies of the N-event trace imported into one database, serially
// (ImportOptions::parallel_files = 1, the reference) and concurrently (one file per core, the
// import's default).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"
#include "kineto_tokenizer.h"
#include "synthetic_trace.h"

namespace fs = std::filesystem;
using namespace fleetscope;

namespace {

struct Phase {
  double wall_s = 0, cpu_s = 0, max_rss_mb = 0;
  bool ok = false;
};

// Runs `fn` in a child process; wall time measured here, CPU time and peak RSS from wait4. When
// `fn` returns a positive number of seconds (the work it timed itself, leaving out setup and
// teardown), that is the phase's wall time and the CPU time is scaled to the same share.
Phase run_child(const std::function<double()>& fn) {
  std::FILE* time_file = std::tmpfile();
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    try {
      const double timed_s = fn();
      std::fprintf(time_file, "%.6f\n", timed_s);
      std::fflush(time_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_import_scale: %s\n", e.what());
      std::_Exit(1);
    }
    std::fflush(stdout);
    std::_Exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Phase p;
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  p.max_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
  p.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::rewind(time_file);
  double timed_s = 0;
  if (std::fscanf(time_file, "%lf", &timed_s) == 1 && timed_s > 0 && timed_s < p.wall_s) {
    p.cpu_s *= timed_s / p.wall_s;  // the untimed share left out, roughly
    p.wall_s = timed_s;
  }
  std::fclose(time_file);
  return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The median of each field over the rounds (peak RSS: the largest); ok only if every round was.
Phase median_of(std::vector<Phase> runs) {
  Phase m;
  auto median = [&](double Phase::*field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  m.wall_s = median(&Phase::wall_s);
  m.cpu_s = median(&Phase::cpu_s);
  m.ok = true;
  for (const auto& r : runs) m.max_rss_mb = std::max(m.max_rss_mb, r.max_rss_mb), m.ok &= r.ok;
  return m;
}

// Keeps every row an import produces, to replay them into a Writer (the insert limit).
struct RecordingSink : store::RowSink {
  std::vector<store::Kernel> kernels;
  std::vector<store::Memcpy> memcpys;
  std::vector<store::Memset> memsets;
  std::vector<store::RuntimeCall> runtime;
  std::vector<store::Sync> syncs;
  std::vector<store::CpuOp> cpu_ops;
  std::vector<store::MemoryEvent> memory;
  std::vector<store::Iteration> iterations;
  int64_t add_capture(const store::Capture&) override { return 1; }
  void update_capture(const store::Capture&) override {}
  int64_t add_host(const store::Host&) override { return 1; }
  int64_t add_workflow(const store::Workflow&) override { return 1; }
  void upsert_process(const store::Process&) override {}
  void add_gpu(const store::GpuInfo&) override {}
  void add(store::Kernel r) override { kernels.push_back(std::move(r)); }
  void add(store::Memcpy r) override { memcpys.push_back(std::move(r)); }
  void add(store::Memset r) override { memsets.push_back(std::move(r)); }
  void add(store::RuntimeCall r) override { runtime.push_back(std::move(r)); }
  void add(store::Sync r) override { syncs.push_back(std::move(r)); }
  void add(store::NvtxEvent) override {}
  void add(store::CpuOp r) override { cpu_ops.push_back(std::move(r)); }
  void add(store::Iteration r) override { iterations.push_back(std::move(r)); }
  void add(store::MemoryEvent r) override { memory.push_back(std::move(r)); }
  void add(store::DeviceSample) override {}
  void add(store::ExternalCorrelation) override {}
  void shift_times(int64_t, int64_t) override {}
  size_t rows() const {
    return kernels.size() + memcpys.size() + memsets.size() + runtime.size() + syncs.size() +
           cpu_ops.size() + memory.size();
  }
};

// The source's rows, replicated until `rows_wanted` rows went into a Writer like import_files'.
void insert_rows(const RecordingSink& src, int64_t rows_wanted, const std::string& db_path,
                 const store::WriterOptions& options) {
  fs::remove(db_path);
  store::Writer writer(store::Database::create(db_path), options);
  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = "kineto-json";
  const int64_t capture_id = writer.add_capture(capture);
  int64_t added = 0;
  for (int64_t replica = 0; added < rows_wanted; ++replica) {
    const int64_t shift = replica * 10'000'000'000;
    auto put = [&](auto row, auto&& fix) {
      if (added >= rows_wanted) return;
      row.captureId = capture_id;
      fix(row);
      writer.add(std::move(row));
      ++added;
    };
    auto times = [&](auto& r) { r.start += shift, r.end += shift; };
    for (const auto& r : src.runtime) put(r, times);
    for (const auto& r : src.cpu_ops) put(r, times);
    for (const auto& r : src.kernels) put(r, times);
    for (const auto& r : src.memcpys) put(r, times);
    for (const auto& r : src.memsets) put(r, times);
    for (const auto& r : src.syncs) put(r, times);
    for (const auto& r : src.memory) put(r, [&](auto& m) { m.ts += shift; });
  }
  writer.finish();
}

// K copies of one synthetic trace into one database: serial, then one file per core.
int multi_file(const std::string& source, const std::string& dir, int64_t n, int files,
               int64_t budget) {
  const std::string path = bench::synthetic_trace_path(dir, source, n);
  bench::SyntheticTrace trace = bench::make_synthetic_trace(source, n, path);
  std::vector<std::string> copies;
  for (int i = 0; i < files; ++i) {
    copies.push_back(dir + "/fleetscope-synth-copy" + std::to_string(i) + ".json");
    fs::remove(copies.back());
    fs::create_symlink(path, copies.back());  // same bytes, its own name (its own capture)
  }
  const std::string out = dir + "/fleetscope-synth-multi.db";
  auto run = [&](size_t parallel_files) {
    return run_child([&] {
      fs::remove(out);
      importers::ImportOptions options;
      options.memory_budget_bytes = budget;
      options.parallel_files = parallel_files;
      importers::import_files(copies, out, options);
      return 0.0;  // the child's wall time
    });
  };
  const Phase serial = run(1);
  const Phase parallel = run(0);
  fs::remove(out);
  for (int i = 0; i < files; ++i) fs::remove(out + ".capture" + std::to_string(i + 1) + ".zoom");
  for (const auto& c : copies) fs::remove(c);
  const double events = static_cast<double>(n) * files;
  std::printf("%d files of %lld events (%.1f MB each) into one database:\n", files,
              static_cast<long long>(n), static_cast<double>(trace.bytes) / 1e6);
  auto line = [&](const char* what, const Phase& p) {
    std::printf("  %-34s %8.2f s %12.0f events/s %8.2f CPU s %6.2f CPU/wall %7.0f MB%s\n", what,
                p.wall_s, events / p.wall_s, p.cpu_s, p.cpu_s / p.wall_s, p.max_rss_mb,
                p.ok ? "" : "  FAILED");
  };
  line("serial (reference)", serial);
  line("concurrent (one file per core)", parallel);
  std::printf("  concurrent / serial = %.2f wall, %.2f CPU\n", parallel.wall_s / serial.wall_s,
              parallel.cpu_s / serial.cpu_s);
  return serial.ok && parallel.ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string source = std::string(FLEETSCOPE_SHARED_DATA) +
                       "/traces/kineto/hta-nccl_parser_config_nccl_data.json.gz";
  std::string dir = "/tmp";
  std::vector<int64_t> sizes;
  int64_t budget = int64_t{1} << 30;
  int files = 0;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--files" && i + 1 < argc)
      files = std::atoi(argv[++i]);
    else if (a == "--events" && i + 1 < argc)
      sizes.push_back(static_cast<int64_t>(std::atof(argv[++i])));
    else if (a == "--source" && i + 1 < argc)
      source = argv[++i];
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--budget" && i + 1 < argc)
      budget = static_cast<int64_t>(std::atof(argv[++i]));
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(
          stderr,
          "usage: bench_import_scale [--events N]... [--repeat R] [--files K] [--source F] "
          "[--dir D] [--budget BYTES]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {100000, 1000000};
  if (!fs::exists(source)) {
    std::fprintf(stderr, "bench_import_scale: %s not found (shared data missing); skipping\n",
                 source.c_str());
    return 0;
  }
  std::printf(
      "Kineto import at scale: source %s, %ld cores online, budget %lld MiB, medians of %d "
      "rounds\n",
      fs::path(source).filename().c_str(), sysconf(_SC_NPROCESSORS_ONLN),
      static_cast<long long>(budget >> 20), repeat);
  std::printf("%10s %9s | %-14s %8s %12s %8s %8s %9s\n", "events", "JSON MB", "phase", "wall s",
              "events/s", "CPU s", "CPU/wall", "RSS MB");
  if (files > 0) return multi_file(source, dir, sizes.front(), files, budget);
  for (int64_t n : sizes) {
    const std::string path = bench::synthetic_trace_path(dir, source, n);
    bench::SyntheticTrace trace = bench::make_synthetic_trace(source, n, path);
    const double mb = static_cast<double>(trace.bytes) / 1e6;

    const std::string out = dir + "/fleetscope-synth-" + std::to_string(n) + ".db";
    const std::string insert_db = dir + "/fleetscope-synth-insert.db";
    importers::ImportOptions options;
    options.memory_budget_bytes = budget;
    auto parse_phase = [&] {
      return run_child([&] {
        importers::kineto::Tokenizer tok(path,
                                         importers::kineto::TokenizerOptions::from_budget(budget));
        importers::kineto::TraceMeta meta = tok.read_metadata();
        int64_t events = 0;
        tok.for_each_event([&](const importers::kineto::RawEvent&) { ++events; });
        tok.read_trailing_metadata(meta);
        if (events != n) throw std::runtime_error("event count mismatch");
        return 0.0;  // the child's wall time: the tokenizer is all it does
      });
    };
    // Rows an import stores (for the insert limit), from the first round's import.
    int64_t rows_stored = 0;
    auto import_phase = [&] {
      std::FILE* rows_file = std::tmpfile();
      Phase p = run_child([&] {
        fs::remove(out);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = importers::import_files({path}, out, options).at(0);
        const double s = seconds_since(t0);
        std::fprintf(rows_file, "%lld\n",
                     static_cast<long long>(r.kernels + r.memcpys + r.memsets + r.runtime_calls +
                                            r.syncs + r.cpu_ops + r.memory_events));
        std::fflush(rows_file);
        return s;
      });
      std::rewind(rows_file);
      long long rows = 0;
      if (std::fscanf(rows_file, "%lld", &rows) == 1) rows_stored = rows;
      std::fclose(rows_file);
      return p;
    };
    auto insert_phase = [&](const store::WriterOptions& writer_options) {
      Phase p = run_child([&] {
        RecordingSink rec;
        importers::import_file(source, rec);
        const auto t0 = std::chrono::steady_clock::now();
        insert_rows(rec, rows_stored, insert_db, writer_options);
        return seconds_since(t0);  // the replay only, not the recording
      });
      fs::remove(insert_db);
      return p;
    };
    // The reference is the faster of two writer settings: the import's (small batches, so the
    // pipeline fills and drains quickly) and the Writer's defaults (65,536-row transactions,
    // which a bulk insert alone can prefer). A setting chosen for the import must not make the
    // limit it is compared with slower.
    store::WriterOptions bulk;
    bulk.temporary_output = true;
    std::vector<Phase> parses, imports, inserts_import, inserts_bulk;
    std::vector<double> round_ratios;
    for (int round = 0; round < repeat; ++round) {
      parses.push_back(parse_phase());
      imports.push_back(import_phase());
      inserts_import.push_back(insert_phase(importers::import_writer_options()));
      inserts_bulk.push_back(insert_phase(bulk));
      const double insert_s = std::min(inserts_import.back().wall_s, inserts_bulk.back().wall_s);
      round_ratios.push_back(imports.back().wall_s / std::max(parses.back().wall_s, insert_s));
    }
    const Phase parse = median_of(parses);
    const Phase import = median_of(imports);
    const Phase insert_import = median_of(inserts_import);
    const Phase insert_bulk = median_of(inserts_bulk);
    const Phase& insert = insert_bulk.wall_s < insert_import.wall_s ? insert_bulk : insert_import;
    fs::remove(out);
    fs::remove(out + ".capture1.zoom");
    auto line = [&](const char* what, const Phase& p) {
      std::printf("%10lld %9.1f | %-14s %8.2f %12.0f %8.2f %8.2f %9.0f%s\n",
                  static_cast<long long>(n), mb, what, p.wall_s, static_cast<double>(n) / p.wall_s,
                  p.cpu_s, p.cpu_s / p.wall_s, p.max_rss_mb, p.ok ? "" : "  FAILED");
    };
    line("parse limit", parse);
    line("insert, bulk", insert_bulk);
    line("insert, import", insert_import);
    line("insert limit", insert);
    line("import", import);
    const double limit = std::max(parse.wall_s, insert.wall_s);
    std::printf(
        "%10lld %9.1f | import / max(parse, insert) = %.2f wall, %.2f CPU (rows stored %lld)\n",
        static_cast<long long>(n), mb, import.wall_s / limit,
        import.cpu_s / std::max(parse.cpu_s, insert.cpu_s), static_cast<long long>(rows_stored));
    if (repeat > 1) {
      std::printf("%10lld %9.1f | per round:", static_cast<long long>(n), mb);
      for (double r : round_ratios) std::printf(" %.2f", r);
      std::printf(" (min %.2f, max %.2f)\n",
                  *std::min_element(round_ratios.begin(), round_ratios.end()),
                  *std::max_element(round_ratios.begin(), round_ratios.end()));
    }
  }
  return 0;
}
