// Store ingest throughput: fleetscope::store::Writer against the reference a careful programmer
// would write by hand — one prepared INSERT into the same table, one transaction per 65,536 rows,
// same pragmas (WAL, synchronous=NORMAL, page_size 8192), no indexes. Both insert the same
// kernel rows (names from a realistic pool of 200, so interning is exercised). Best of N runs.
//
//   build/release/bench/store/bench_store_ingest [ROWS] [RUNS]
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "fleetscope/store/writer.h"

using namespace fleetscope::store;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<std::string> name_pool() {
  std::vector<std::string> names;
  for (int i = 0; i < 200; ++i)
    names.push_back("void at::native::elementwise_kernel<128, 4, at::native::op_" +
                    std::to_string(i) + "<float> >(int, at::native::op_" + std::to_string(i) +
                    "<float>)");
  return names;
}

Kernel kernel_row(int64_t i, const std::string& name) {
  Kernel k;
  k.start = 1'700'000'000'000'000'000 + i * 5000;
  k.end = k.start + 3000 + (i % 7) * 100;
  k.deviceId = static_cast<int32_t>(i % 8);
  k.streamId = 7 + static_cast<int32_t>(i % 4);
  k.correlationId = i;
  k.globalPid = global_pid(4242);
  k.demangledName = name;
  k.gridX = 108;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 0;
  k.dynamicSharedMemory = 4096;
  k.captureId = 1;
  return k;
}

std::string temp_db(const char* tag) {
  return (std::filesystem::temp_directory_path() /
          ("fleetscope-bench-" + std::string(tag) + "-" + std::to_string(getpid()) + ".db"))
      .string();
}

void remove_db(const std::string& path) {
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
}

// CPU seconds of this process (all threads): on a shared machine wall time measures the load,
// CPU time the work.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Timing {
  double wall = 1e30, cpu = 1e30;
  void keep_best(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

double last_cpu = 0;  // CPU seconds of the last run_* call

double run_writer(int64_t rows, const std::vector<std::string>& names, bool temporary_output) {
  std::string path = temp_db("writer");
  remove_db(path);
  const double c0 = cpu_seconds();
  auto t0 = Clock::now();
  {
    Writer w(Database::create(path), WriterOptions{.temporary_output = temporary_output});
    w.add_capture({.source = "bench"});
    for (int64_t i = 0; i < rows; ++i)
      w.add(kernel_row(i, names[static_cast<size_t>(i / 64) % names.size()]));
    w.flush();
  }
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  last_cpu = cpu_seconds() - c0;
  remove_db(path);
  return seconds;
}

// The hand-written reference: strings pre-interned by the caller (an advantage it gets for free).
double run_plain(int64_t rows, const std::vector<std::string>& names) {
  std::string path = temp_db("plain");
  remove_db(path);
  const double c0 = cpu_seconds();
  auto t0 = Clock::now();
  {
    Database db = Database::create(path);
    sqlite3* raw = db.raw();
    sqlite3_exec(raw, "INSERT INTO captures(id, kind, source) VALUES (1, 'imported', 'bench')",
                 nullptr, nullptr, nullptr);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(
        raw,
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, "
        "correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, "
        "blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, "
        "captureId) VALUES (?,?,?,NULL,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        -1, &s, nullptr);
    sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr);
    for (int64_t i = 0; i < rows; ++i) {
      Kernel k = kernel_row(i, names[static_cast<size_t>(i / 64) % names.size()]);
      int64_t name_id = static_cast<int64_t>((i / 64) % static_cast<int64_t>(names.size())) + 1;
      sqlite3_bind_int64(s, 1, k.start);
      sqlite3_bind_int64(s, 2, k.end);
      sqlite3_bind_int64(s, 3, k.deviceId);
      sqlite3_bind_int64(s, 4, k.streamId);
      sqlite3_bind_int64(s, 5, *k.correlationId);
      sqlite3_bind_int64(s, 6, *k.globalPid);
      sqlite3_bind_int64(s, 7, name_id);
      sqlite3_bind_int64(s, 8, name_id);
      sqlite3_bind_int64(s, 9, k.gridX);
      sqlite3_bind_int64(s, 10, k.gridY);
      sqlite3_bind_int64(s, 11, k.gridZ);
      sqlite3_bind_int64(s, 12, k.blockX);
      sqlite3_bind_int64(s, 13, k.blockY);
      sqlite3_bind_int64(s, 14, k.blockZ);
      sqlite3_bind_int64(s, 15, *k.registersPerThread);
      sqlite3_bind_int64(s, 16, *k.staticSharedMemory);
      sqlite3_bind_int64(s, 17, *k.dynamicSharedMemory);
      sqlite3_bind_int64(s, 18, 1);
      sqlite3_step(s);
      sqlite3_reset(s);
      if ((i + 1) % 65536 == 0) {
        sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
        sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr);
      }
    }
    sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_finalize(s);
  }
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  last_cpu = cpu_seconds() - c0;
  remove_db(path);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = argc > 1 ? std::stoll(argv[1]) : 2'000'000;
  int runs = argc > 2 ? std::stoi(argv[2]) : 3;
  auto names = name_pool();
  Timing plain, live, temp;
  for (int r = 0; r < runs; ++r) {
    double w = run_plain(rows, names);
    plain.keep_best(w, last_cpu);
    w = run_writer(rows, names, false);
    live.keep_best(w, last_cpu);
    w = run_writer(rows, names, true);
    temp.keep_best(w, last_cpu);
  }
  auto rate = [&](double seconds) { return static_cast<double>(rows) / seconds; };
  std::printf("rows per run: %lld, best of %d runs (wall and CPU time each the best)\n",
              static_cast<long long>(rows), runs);
  auto line = [&](const char* what, const Timing& t) {
    std::printf("%-52s %10.0f rows/s  (%.3f s)  %.2fx | CPU %.3f s, %10.0f rows/CPU-s  %.2fx\n",
                what, rate(t.wall), t.wall, plain.wall / t.wall, t.cpu, rate(t.cpu),
                plain.cpu / t.cpu);
  };
  line("plain prepared-insert loop, WAL (reference)", plain);
  line("store::Writer, live database (WAL)", live);
  line("store::Writer, temporary_output (import/run files)", temp);
  return 0;
}
