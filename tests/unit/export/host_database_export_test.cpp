// Exporting one capture of the daemon's host database, which keeps no per-capture index on its
// event tables (captures streamed in turn, their rows interleaved): the exporter reads the
// capture's rows through store::capture_rows_sql (its row ranges) and writes exactly what it
// writes from the same file with the indexes of a one-shot file.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::exporter {
namespace {

using testing::read_raw_bytes;
using testing::ScratchDir;

std::vector<int64_t> write_interleaved_captures(const std::string& path) {
  store::WriterOptions options;
  options.build_indexes = false;  // as the daemon's host database
  store::Writer w(store::Database::create(path), options);
  std::vector<int64_t> captures;
  for (int c = 0; c < 3; ++c) captures.push_back(w.add_capture({.source = "agent"}));
  for (int round = 0; round < 3; ++round)
    for (int64_t id : captures) {
      store::RowVectors rows;
      for (int i = 0; i < 20; ++i) {
        const int64_t t = 1'000'000 * id + 10'000 * (20 * round + i);
        const int64_t correlation = 20 * round + i + 1;
        rows.push(store::RuntimeCall{.start = t - 3'000,
                                     .end = t - 1'000,
                                     .globalTid = 0x1000000 * (100 + id) + 7,
                                     .correlationId = correlation,
                                     .name = "cudaLaunchKernel",
                                     .captureId = id});
        store::Kernel k;
        k.start = t;
        k.end = t + 4'000;
        k.streamId = 7 + i % 2;
        k.correlationId = correlation;
        k.demangledName = "kernel_of_capture_" + std::to_string(id);
        k.captureId = id;
        rows.push(std::move(k));
      }
      w.wait_committed(w.add_rows(rows, rows.size()));
    }
  w.finish();
  return captures;
}

std::string exported(const std::string& db, const std::string& out, int64_t capture,
                     ChromeExportStats* stats = nullptr) {
  ChromeExportOptions options;
  options.capture_id = capture;
  options.gzip = false;
  options.findings = false;
  const ChromeExportStats s = export_chrome(store::Reader(db), out, options);
  if (stats) *stats = s;
  return read_raw_bytes(out);
}

TEST(HostDatabaseExport, OneCaptureByItsRowRangesIsWhatTheIndexedFileGives) {
  ScratchDir dir;
  const std::string db = dir.file("host.db");
  const std::vector<int64_t> captures = write_interleaved_captures(db);
  std::vector<std::string> by_ranges;
  for (int64_t id : captures) {
    ChromeExportStats stats;
    by_ranges.push_back(exported(db, dir.file("r" + std::to_string(id) + ".json"), id, &stats));
    EXPECT_EQ(stats.kernels, 60);
    EXPECT_EQ(stats.runtime_calls, 60);
    EXPECT_EQ(stats.flows, 60);
    const std::string& text = by_ranges.back();
    EXPECT_NE(text.find("kernel_of_capture_" + std::to_string(id)), std::string::npos);
    for (int64_t other : captures) {
      if (other != id) {
        EXPECT_EQ(text.find("kernel_of_capture_" + std::to_string(other)), std::string::npos);
      }
    }
  }
  {
    store::Database file = store::Database::open(db, store::OpenMode::read_write);
    file.exec(store::index_sql());
  }
  for (size_t c = 0; c < captures.size(); ++c)
    EXPECT_EQ(exported(db, dir.file("i" + std::to_string(captures[c]) + ".json"), captures[c]),
              by_ranges[c])
        << "capture " << captures[c];
}

}  // namespace
}  // namespace fleetscope::exporter
