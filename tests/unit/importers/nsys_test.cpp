// Nsight Systems SQLite export importer. No nsys export is in the shared data, so the tests build
// one with the sqlite3 API, using nsys's table and column names (nsys 2023/2024 `nsys export
// --type sqlite`): names in kernel/runtime rows are StringIds ids, extra nsys columns we do not
// read (cacheConfig, sharedMemoryExecuted, migrationCause, ...) are present on purpose.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "fleetscope/importers/importers.h"
#include "importer_test_util.h"

namespace fleetscope::importers::test {
namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "") << "\n"
      << sql;
}

// Writes an nsys-like export. `skip` names tables to leave out.
std::string make_nsys_export(const std::string& path, const std::set<std::string>& skip = {}) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto table = [&](const std::string& name, const std::string& ddl, const std::string& rows) {
    if (skip.count(name)) return;
    exec(db, "CREATE TABLE " + name + " (" + ddl + ");");
    if (!rows.empty()) exec(db, "INSERT INTO " + name + " VALUES " + rows + ";");
  };
  table("StringIds", "id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL",
        "(1,'void gemm_kernel<float>(float*, int)'),(2,'gemm_kernel'),(3,'cudaLaunchKernel'),"
        "(4,'cuLaunchKernel'),(5,'cudaMemcpyAsync'),(6,'train_step'),(7,'cudaStreamSynchronize')");
  table(
      "CUPTI_ACTIVITY_KIND_KERNEL",
      "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER "
      "NOT NULL, "
      "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER "
      "NOT NULL, "
      "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, "
      "registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ "
      "INTEGER NOT NULL, "
      "blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, "
      "staticSharedMemory INTEGER NOT NULL, "
      "dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, "
      "localMemoryTotal INTEGER NOT NULL, "
      "gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, "
      "sharedMemoryLimitConfig INTEGER",
      "(1000,2000,0,1,7,11,1234*16777216,1,2,NULL,0,0,64,108,1,1,256,1,1,0,4096,0,0,1,0,NULL,NULL),"
      "(3000,3500,0,1,7,12,1234*16777216,1,2,NULL,0,0,64,216,1,1,128,1,1,0,0,0,0,2,0,NULL,NULL)");
  table("CUPTI_ACTIVITY_KIND_MEMCPY",
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
        "INTEGER NOT NULL, "
        "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT "
        "NULL, "
        "copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, "
        "srcDeviceId INTEGER, "
        "srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, "
        "graphNodeId INTEGER",
        "(500,900,0,1,7,13,1234*16777216,1048576,1,NULL,1,3,NULL,NULL,0,1,NULL,NULL)");
  table("CUPTI_ACTIVITY_KIND_MEMSET",
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
        "INTEGER NOT NULL, "
        "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT "
        "NULL, "
        "bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER",
        "(2500,2600,0,1,7,14,1234*16777216,0,4096,NULL,3)");
  table("CUPTI_ACTIVITY_KIND_RUNTIME",
        "start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid "
        "INTEGER, "
        "correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId "
        "INTEGER",
        "(900,950,0,1234*16777216+1240,11,3,0,NULL),(2900,2950,0,1234*16777216+1240,12,4,0,NULL),"
        "(400,480,0,1234*16777216+1234,13,5,0,NULL),(3600,4000,0,1234*16777216+1234,15,7,0,NULL)");
  table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
        "INTEGER NOT NULL, "
        "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, "
        "eventId INTEGER",
        "(3600,4000,0,1,7,15,1234*16777216,3,NULL)");
  table("NVTX_EVENTS",
        "start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
        "category INTEGER, "
        "color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, "
        "domainId INTEGER, "
        "uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, "
        "int32Value INTEGER, "
        "floatValue REAL, jsonTextId INTEGER, jsonText TEXT",
        "(100,4100,59,NULL,NULL,NULL,NULL,1234*16777216+1234,NULL,6,0,NULL,NULL,NULL,NULL,NULL,"
        "NULL,NULL,NULL),"
        "(150,NULL,34,NULL,NULL,NULL,'checkpoint',1234*16777216+1234,NULL,NULL,0,NULL,NULL,NULL,"
        "NULL,NULL,NULL,NULL,NULL)");
  table(
      "TARGET_INFO_GPU",
      "id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT NOT NULL, isDiscrete INTEGER NOT "
      "NULL, "
      "l2CacheSize INTEGER NOT NULL, totalMemory INTEGER NOT NULL, memoryBandwidth INTEGER NOT "
      "NULL, "
      "clockRate INTEGER NOT NULL, smCount INTEGER NOT NULL, pwGpuId INTEGER, uuid TEXT, luid "
      "INTEGER, "
      "chipName TEXT, cuDevice INTEGER, ctxId INTEGER, computeMajor INTEGER, computeMinor INTEGER, "
      "maxThreadsPerBlock INTEGER, threadsPerWarp INTEGER, maxBlocksPerSm INTEGER, maxWarpsPerSm "
      "INTEGER, "
      "maxShmemPerBlock INTEGER, maxRegistersPerBlock INTEGER, maxRegistersPerSm INTEGER, "
      "maxShmemPerSm INTEGER",
      "(0,'NVIDIA "
      "A100-SXM4-40GB','0000:07:00.0',1,41943040,42505273344,1555200000000,1410000000,108,NULL,"
      "'GPU-1234',NULL,'GA100',0,1,8,0,1024,32,32,64,49152,65536,65536,167936)");
  table("PROCESSES", "globalPid INTEGER, pid INTEGER, name TEXT", "(1234*16777216,1234,'python3')");
  sqlite3_close(db);
  return path;
}

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
