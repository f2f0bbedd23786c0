// bench_importers [TRACE.json.gz] [REPEATS]
//
// Kineto import throughput (MB/s of decompressed JSON, events/s) on the largest shared trace,
// compared in the same run with a named reference: simdjson's DOM parser (runtime-dispatched
// SIMD kernel) on the same decompressed bytes, i.e. "just parse the JSON" with nothing stored.
// Stages timed separately: gunzip, tokenizer (both On-Demand passes, events materialised, no
// rows), full import (tokenize + parse + track + SQLite writer + indexes). Best of REPEATS.
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "kineto_input.h"
#include "kineto_tokenizer.h"

namespace fs = std::filesystem;
using namespace fleetscope;

namespace {

double best_ms(int repeats, const std::function<void()>& fn) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1]
                              : std::string(FLEETSCOPE_SHARED_DATA) +
                                    "/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz";
  int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  if (!fs::exists(path)) {
    std::fprintf(stderr, "bench_importers: %s not found (shared data missing); skipping\n",
                 path.c_str());
    return 0;
  }
  const double file_mb = static_cast<double>(fs::file_size(path)) / 1e6;
  auto read_all = [&] {
    importers::kineto::InputStream in(path);
    std::string data;
    char chunk[1 << 16];
    size_t n;
    while ((n = in.read(chunk, sizeof chunk)) > 0) data.append(chunk, n);
    return simdjson::padded_string(data);
  };
  const simdjson::padded_string input = read_all();
  const double json_mb = static_cast<double>(input.size()) / 1e6;

  int64_t events = 0;
  double gunzip = best_ms(repeats, [&] { auto in = read_all(); });

  simdjson::dom::parser parser;  // reused, as a long-lived importer would
  double dom = best_ms(repeats, [&] {
    simdjson::dom::element doc;
    auto err = parser.parse(input).get(doc);
    if (err) std::abort();
    simdjson::dom::array arr;
    if (doc["traceEvents"].get_array().get(arr)) std::abort();
    events = static_cast<int64_t>(arr.size());
  });

  double tokenize = best_ms(repeats, [&] {
    importers::kineto::Tokenizer tok(path);
    auto meta = tok.read_metadata();
    int64_t n = 0;
    tok.for_each_event([&](const importers::kineto::RawEvent&) { ++n; });
    tok.read_trailing_metadata(meta);
    if (n != events) std::abort();
  });

  const std::string out = (fs::temp_directory_path() / "fleetscope-bench-import.db").string();
  importers::ImportResult result;
  double import = best_ms(repeats, [&] {
    fs::remove(out);
    result = importers::import_files({path}, out).at(0);
  });
  fs::remove(out);

  auto row = [&](const char* what, double ms) {
    std::printf("  %-46s %9.1f ms %9.1f MB/s %12.0f events/s\n", what, ms, json_mb / (ms / 1e3),
                static_cast<double>(events) / (ms / 1e3));
  };
  std::printf(
      "Kineto import: %s\n  %.2f MB gzip, %.2f MB JSON, %lld events; best of %d; simdjson %d.%d.%d "
      "(DOM kernel: %s, On-Demand kernel: %s)\n",
      fs::path(path).filename().c_str(), file_mb, json_mb, static_cast<long long>(events), repeats,
      int(simdjson::SIMDJSON_VERSION_MAJOR), int(simdjson::SIMDJSON_VERSION_MINOR),
      int(simdjson::SIMDJSON_VERSION_REVISION),
      simdjson::get_active_implementation()->name().c_str(),
      simdjson::builtin_implementation()->name().c_str());
  row("gunzip + read (zlib, streamed)", gunzip);
  row("reference: simdjson DOM parse (no rows)", dom);
  row("tokenizer: streamed, On-Demand (no rows)", tokenize);
  row("full import (rows -> SQLite, indexes)", import);
  std::printf("  ratio full import / reference DOM parse: %.1fx slower; rows stored: %lld\n",
              import / dom,
              static_cast<long long>(result.kernels + result.memcpys + result.memsets +
                                     result.runtime_calls + result.syncs + result.cpu_ops +
                                     result.iterations));
  return 0;
}
