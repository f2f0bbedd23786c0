// A small Nsight Systems SQLite export written with the sqlite3 API, in nsys's table and column
// names (nsys 2023/2024 `nsys export --type sqlite`): names in kernel/runtime rows are StringIds
// ids, extra nsys columns fleetscope does not read (cacheConfig, sharedMemoryExecuted,
// migrationCause, ...) are present on purpose. No real export is in the test data; the importer
// tests and the reading commands' tests share this one.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>
#include <string>

namespace fleetscope::test_support {

inline void exec_sql(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "") << "\n"
      << sql;
}

// Writes an nsys-like export. `skip` names tables to leave out.
inline std::string make_nsys_export(const std::string& path,
                                    const std::set<std::string>& skip = {}) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto table = [&](const std::string& name, const std::string& ddl, const std::string& rows) {
    if (skip.count(name)) return;
    exec_sql(db, "CREATE TABLE " + name + " (" + ddl + ");");
    if (!rows.empty()) exec_sql(db, "INSERT INTO " + name + " VALUES " + rows + ";");
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

}  // namespace fleetscope::test_support
