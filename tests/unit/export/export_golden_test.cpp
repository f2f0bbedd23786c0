// The exporter's whole output, byte for byte, on real Kineto traces (imported here); the tables
// they lack (NVTX, memory events, device samples, every placement of a sync) are in
// chrome_trace_test.cpp's ChromeExport.EveryTableIsByteForByteAsRecorded. Each expected output is
// recorded as its size and a 64-bit FNV-1a digest, taken from the exporter before its per-table
// event writers became one generic writer (issue 23); the refactor had to keep them.
//
// A deliberate change of the output changes them: run with FLEETSCOPE_KEEP_TEST_FILES=1, diff the
// kept outputs against the previous build's, and record the new figures the failure prints.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::exporter {
namespace {

using testing::fnv1a_digest;
using testing::read_raw_bytes;
using testing::ScratchDir;

struct Golden {
  const char* name;  // a trace of tests/data/traces/kineto
  size_t bytes;
  const char* fnv1a;
};

void PrintTo(const Golden& golden, std::ostream* os) {
  *os << golden.name;
}

class ExportGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(ExportGolden, TheWholeOutputIsByteForByteAsRecorded) {
  const Golden& golden = GetParam();
  ScratchDir dir;
  const std::string trace = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + golden.name;
  ASSERT_TRUE(std::filesystem::exists(trace))
      << "reference trace missing: " << trace << " (tests/data/README.md)";
  const std::string db = dir.file("imported.db");
  ASSERT_EQ(importers::import_files({trace}, db).size(), 1u);
  store::Reader reader(db);
  ChromeExportOptions options;
  options.gzip = false;
  const std::string out = dir.file("exported.json");
  export_chrome(reader, out, options);
  const std::string bytes = read_raw_bytes(out);
  EXPECT_EQ(bytes.size(), golden.bytes) << golden.name;
  EXPECT_EQ(fnv1a_digest(bytes), golden.fnv1a)
      << golden.name << ": the export changed; if on purpose, record {\"" << golden.name << "\", "
      << bytes.size() << ", \"" << fnv1a_digest(bytes) << "\"} (FLEETSCOPE_KEEP_TEST_FILES=1 "
      << "keeps " << out << " to diff)";
}

INSTANTIATE_TEST_SUITE_P(
    RecordedOutputs, ExportGolden,
    ::testing::Values(
        Golden{"hta-critical_path_alexnet_trace.json.gz", 207505, "b8e2bcc7e09d75b1"},
        Golden{"hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", 17136,
               "6e17564c7b32f59b"},
        Golden{"hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", 29320,
               "fb293afdce1457b5"},
        Golden{"hta-timeline_analysis_sampled_rank-0.json.gz", 1565493, "60feeefac137e941"}),
    [](const ::testing::TestParamInfo<Golden>& info) {
      std::string name = info.param.name;
      name = name.substr(0, name.find(".json"));
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace fleetscope::exporter
