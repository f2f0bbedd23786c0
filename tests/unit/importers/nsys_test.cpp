// Nsight Systems SQLite export importer. No nsys export is in the shared data, so the tests build
// one with the sqlite3 API, using nsys's table and column names (nsys 2023/2024 `nsys export
// --type sqlite`): names in kernel/runtime rows are StringIds ids, extra nsys columns we do not
// read (cacheConfig, sharedMemoryExecuted, migrationCause, ...) are present on purpose.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "fleetscope/importers/importers.h"
#include "importer_test_util.h"
#include "nsys_export.h"

namespace fleetscope::importers::test {
namespace {

using test_support::make_nsys_export;

TEST(NsysImporter, ImportsEveryTable) {
  ScratchDir dir;
  const std::string in = make_nsys_export(dir.file("report.sqlite"));
  EXPECT_EQ(detect_format(in), Format::nsys_sqlite);
  auto results = import_files({in}, dir.file("out.db"));
  const ImportResult& r = results.at(0);
  EXPECT_EQ(r.source, "nsys-sqlite");
  EXPECT_EQ(r.kernels, 2);
  EXPECT_EQ(r.memcpys, 1);
  EXPECT_EQ(r.memsets, 1);
  EXPECT_EQ(r.runtime_calls, 4);
  EXPECT_EQ(r.syncs, 1);
  EXPECT_EQ(r.nvtx_events, 2);
  EXPECT_EQ(r.gpus, 1);
  EXPECT_EQ(r.start_ns, 100);
  EXPECT_EQ(r.end_ns, 4100);

  store::Reader db(dir.file("out.db"));
  auto cap = db.capture(r.capture_id);
  ASSERT_TRUE(cap);
  EXPECT_EQ(cap->source, "nsys-sqlite");
  EXPECT_EQ(cap->gpu_vendor, "nvidia");
  EXPECT_EQ(cap->source_path, in);
  auto kernels = db.kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(db.string(kernels[0].demangledNameId), "void gemm_kernel<float>(float*, int)");
  EXPECT_EQ(db.string(kernels[0].shortNameId), "gemm_kernel");
  EXPECT_EQ(kernels[0].gridX, 108);
  EXPECT_EQ(kernels[0].dynamicSharedMemory, 4096);
  EXPECT_EQ(kernels[0].globalPid, store::global_pid(1234));
  // Schema 4's column (tables.py, kernel gridId) is read from the export as the agent fills it.
  EXPECT_EQ(kernels[0].gridId, 1);
  EXPECT_EQ(kernels[1].gridId, 2);
  EXPECT_EQ(
      scalar(
          db,
          "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
          "WHERE s.value = 'cuLaunchKernel' AND r.eventClass = 1"),
      1);
  EXPECT_EQ(
      scalar(db,
             "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
             "USING (correlationId)"),
      2);
  EXPECT_EQ(
      scalar(db, "SELECT copyKind * 100 + srcKind * 10 + dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
      113);
  EXPECT_EQ(scalar(db, "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
            store::kSyncStream);
  EXPECT_EQ(text(db, "SELECT text FROM NVTX_EVENTS WHERE eventType = 59"), "train_step");
  EXPECT_EQ(text(db, "SELECT text FROM NVTX_EVENTS WHERE eventType = 34"), "checkpoint");
  auto gpus = db.gpus();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpus[0].smCount, 108);
  EXPECT_EQ(gpus[0].computeMajor, 8);
  EXPECT_EQ(gpus[0].totalMemory, 42505273344LL);
  EXPECT_EQ(gpus[0].maxShmemPerSm, 167936);
  EXPECT_EQ(gpus[0].uuid, "GPU-1234");
  EXPECT_EQ(text(db, "SELECT command FROM processes WHERE pid = 1234"), "python3");
}

TEST(NsysImporter, TablesNsysLeavesOutWhenEmptyAreOptional) {
  ScratchDir dir;
  const std::string in = make_nsys_export(
      dir.file("cpu.sqlite"),
      {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
       "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "TARGET_INFO_GPU"});
  auto results = import_files({in}, dir.file("out.db"));
  EXPECT_EQ(results.at(0).nvtx_events, 2);
  EXPECT_FALSE(results.at(0).gpu_vendor.has_value());
  EXPECT_EQ(results.at(0).note, "no GPU activity in this trace");
}

TEST(NsysImporter, MixedWithKinetoInOneDatabase) {
  ScratchDir dir;
  const std::string nsys = make_nsys_export(dir.file("a.sqlite"));
  const std::string kineto = dir.write("b.json", R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]})");
  auto results = import_files({nsys, kineto}, dir.file("out.db"));
  ASSERT_EQ(results.size(), 2u);
  store::Reader db(dir.file("out.db"));
  EXPECT_EQ(count(db, "CUPTI_ACTIVITY_KIND_KERNEL", results[0].capture_id), 2);
  EXPECT_EQ(count(db, "CUPTI_ACTIVITY_KIND_KERNEL", results[1].capture_id), 1);
}

}  // namespace
}  // namespace fleetscope::importers::test
