#!/usr/bin/env python3
"""Writes the nsys SQLite seeds of corpus/nsys_sqlite/ (run from tests/fuzz/; the files are
committed). Tables and columns follow `nsys export --type sqlite` as the importer reads them."""
import os
import sqlite3

KERNEL = ("start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
          "INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
          "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, "
          "launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX "
          "INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT "
          "NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT "
          "NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, "
          "localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted "
          "INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER")
RUNTIME = ("start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid "
           "INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, "
           "callchainId INTEGER")
MEMCPY = ("start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId "
          "INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
          "bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind "
          "INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId "
          "INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER")


def write(path, kernels, runtime, memcpy):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size = 1024")
    db.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany("INSERT INTO StringIds VALUES (?, ?)",
                   [(1, "void gemm_kernel<float>(float*, int)"), (2, "gemm_kernel"),
                    (3, "cudaLaunchKernel"), (4, "cudaMemcpyAsync"),
                    (5, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")])
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({KERNEL})")
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * 27)})", kernels)
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME ({RUNTIME})")
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,?)", runtime)
    db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY ({MEMCPY})")
    db.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ({','.join('?' * 18)})", memcpy)
    db.commit()
    db.close()


PID = 1234 * 16777216


def kernel(start, end, corr, name=1, grid=(108, 1, 1), stream=7):
    return (start, end, 0, 1, stream, corr, PID, name, 2, None, 0, 0, 64, *grid, 256, 1, 1, 0, 0, 0,
            0, corr, 0, None, None)


def call(start, end, corr, name=3):
    return (start, end, 0, PID + 1240, corr, name, 0, None)


os.makedirs("corpus/nsys_sqlite", exist_ok=True)
write("corpus/nsys_sqlite/small.sqlite",
      [kernel(1000, 2000, 11), kernel(3000, 3500, 12), kernel(2500, 6000, 13, name=5, stream=9)],
      [call(900, 950, 11), call(2900, 2950, 12), call(2400, 2450, 13)],
      [(500, 900, 0, 1, 7, 14, PID, 1048576, 1, None, 1, 3, None, None, 0, 1, None, None)])
# Edge values: the largest grid, a negative duration, times at the ends of int64.
write("corpus/nsys_sqlite/edges.sqlite",
      [kernel(1000, 900, 11, grid=(2147483647, 2147483647, 2147483647)),
       kernel(-9223372036854775808, 9223372036854775807, 12)],
      [call(900, 950, 11), call(0, 1, 12)], [])
