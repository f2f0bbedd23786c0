// Parity with HTA 0.5.0 on an MTIA trace: HTA classifies device work with get_kernel_type, where a
// name starting with "dma" (an MTIA DMA transfer) is MEMORY, not compute — in the temporal
// breakdown too (hta/analyzers/breakdown_analysis.py get_temporal_breakdown). No real MTIA trace
// is among the shared traces, so the trace is a small hand-made one in Kineto's MTIA format
// (tests/data/hta_reference/mtia/make_trace.py); HTA's numbers for it were computed once by
// compute_reference.py into hta_reference_mtia.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fleetscope/analyzer/capture_data.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"
#include "temp_dir.h"

namespace fleetscope::analyzer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTrace = "mtia_dma_rank-0.json.gz";

json hta_reference() {
  std::ifstream in(HTA_REFERENCE_MTIA_JSON);
  if (!in) throw std::runtime_error("cannot read " + std::string(HTA_REFERENCE_MTIA_JSON));
  return json::parse(in);
}

// The database goes into a folder of its own, removed with what the import wrote beside it (the
// zoom summary): in /tmp itself, a folder others may write, the summary went to
// ~/.cache/fleetscope, one file per run left behind.
CaptureData load_mtia_trace() {
  const test_support::TempDir dir;
  const std::string db = dir.file("mtia-parity.db");
  importers::import_files({std::string(HTA_MTIA_TRACE_DIR) + "/" + kTrace}, db);
  store::Reader reader(db);
  return load_capture(reader, resolve_capture_id(reader, std::nullopt));
}

TEST(HtaParityMtia, DmaTransfersAreNotComputeInTheTemporalBreakdown) {
  const json ref = hta_reference();
  ASSERT_EQ(ref.at("hta_version"), "0.5.0");
  const json& hta = ref.at("traces").at(kTrace).at("temporal_breakdown").at("0");
  const CaptureData data = load_mtia_trace();
  const auto rows = temporal_breakdown(data);
  ASSERT_EQ(rows.size(), 1u) << "one MTIA device";
  const TemporalBreakdown& row = rows.front();
  // The trace's times are whole µs, so HTA's µs are exact: compare exactly.
  EXPECT_EQ(row.span_ns, hta.at("kernel_time_us").get<int64_t>() * 1000);
  EXPECT_EQ(row.idle_ns, hta.at("idle_time_us").get<int64_t>() * 1000);
  EXPECT_EQ(row.compute_ns, hta.at("compute_time_us").get<int64_t>() * 1000)
      << "compute must leave out the dma_request transfers";
  EXPECT_EQ(row.non_compute_ns, hta.at("non_compute_time_us").get<int64_t>() * 1000);
  EXPECT_NEAR(100.0 * row.compute_fraction(), hta.at("compute_time_pctg").get<double>(), 0.005);
  EXPECT_NEAR(100.0 * row.non_compute_fraction(), hta.at("non_compute_time_pctg").get<double>(),
              0.005);
}

TEST(HtaParityMtia, KernelTypeUnionPutsDmaInMemory) {
  const json ref = hta_reference();
  const json& by_type = ref.at("traces").at(kTrace).at("kernel_type_breakdown").at("union_us");
  const CaptureData data = load_mtia_trace();
  const auto rows = device_metrics(data);
  ASSERT_EQ(rows.size(), 1u);
  const KernelTimeByType& k = rows[0].kernel_time_by_type;
  EXPECT_EQ(k.computation_ns, by_type.at("COMPUTATION").get<int64_t>() * 1000);
  EXPECT_EQ(k.memory_ns, by_type.at("MEMORY").get<int64_t>() * 1000);
  EXPECT_EQ(k.communication_ns, by_type.at("COMMUNICATION").get<int64_t>() * 1000);
}

TEST(HtaParityMtia, ClassificationIsHtasKernelTypeForEveryDevice) {
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "dma_request"), WorkClass::memory);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "mtia_matmul_kernel"), WorkClass::computation);
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "fused_dma_helper"), WorkClass::computation)
      << "HTA's rule is ^dma: a later 'dma' is compute";
  EXPECT_EQ(classify_gpu_work(GpuEventKind::kernel, "Stream Sync"), WorkClass::synchronization);
}

}  // namespace
}  // namespace fleetscope::analyzer
