// Builders for real CUPTI activity records (CUDA 13 layouts) with every stored field set to a
// distinct value, so that a field copied into the wrong column cannot go unnoticed.
#pragma once

#include <cupti_activity.h>

#include <cstring>

namespace fleetscope::agent::testing {

inline CUpti_ActivityKernel10 make_kernel(const char* name) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.registersPerThread = 40;
  k.start = 1'700'000'000'000'000'100ULL;
  k.end = 1'700'000'000'000'050'100ULL;
  k.deviceId = 1;
  k.contextId = 7;
  k.streamId = 13;
  k.gridX = 120;
  k.gridY = 2;
  k.gridZ = 3;
  k.blockX = 256;
  k.blockY = 4;
  k.blockZ = 1;
  k.staticSharedMemory = 2048;
  k.dynamicSharedMemory = 4096;
  k.localMemoryPerThread = 24;
  k.correlationId = 555;
  k.name = name;
  k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
  k.graphNodeId = 9001;
  k.graphId = 77;
  k.gridId = 424242;
  return k;
}

inline CUpti_ActivityMemcpy6 make_memcpy() {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.start = 2'000'000'000'000'000'000ULL;
  m.end = 2'000'000'000'000'090'000ULL;
  m.deviceId = 0;
  m.contextId = 3;
  m.streamId = 14;
  m.correlationId = 601;
  m.graphNodeId = 0;
  return m;
}

inline CUpti_ActivityMemset4 make_memset() {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0xAB;
  m.bytes = 65536;
  m.start = 3'000'000'000'000'000'000ULL;
  m.end = 3'000'000'000'000'004'000ULL;
  m.deviceId = 2;
  m.contextId = 5;
  m.streamId = 15;
  m.correlationId = 602;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.graphNodeId = 4242;
  return m;
}

inline CUpti_ActivityAPI make_api(CUpti_ActivityKind kind, uint32_t cbid, uint32_t correlation) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = kind;
  a.cbid = cbid;
  a.start = 4'000'000'000'000'000'000ULL;
  a.end = 4'000'000'000'000'007'500ULL;
  a.processId = 4321;
  a.threadId = 4330;
  a.correlationId = correlation;
  a.returnValue = 2;
  return a;
}

inline CUpti_ActivitySynchronization2 make_sync(uint32_t context, uint32_t stream, uint32_t event) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 5'000'000'000'000'000'000ULL;
  s.end = 5'000'000'000'000'100'000ULL;
  s.correlationId = 700;
  s.contextId = context;
  s.streamId = stream;
  s.cudaEventId = event;
  return s;
}

// A cudaEventRecord of `event` (context 7) on `stream` by the call with `correlation`.
inline CUpti_ActivityCudaEvent2 make_cuda_event(uint32_t event, uint32_t stream,
                                                uint32_t correlation, uint64_t sync_id) {
  CUpti_ActivityCudaEvent2 e;
  std::memset(&e, 0, sizeof e);
  e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
  e.correlationId = correlation;
  e.contextId = 7;
  e.streamId = stream;
  e.eventId = event;
  e.deviceId = 1;
  e.cudaEventSyncId = sync_id;
  return e;
}

inline CUpti_ActivityMarker2 make_marker(uint32_t flags, uint32_t id, uint64_t ts, const char* name,
                                         const char* domain, uint32_t pid, uint32_t tid) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.timestamp = ts;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = pid;
  m.objectId.pt.threadId = tid;
  m.name = name;
  m.domain = domain;
  return m;
}

inline CUpti_ActivityMemory4 make_memory(CUpti_ActivityMemoryOperationType op,
                                         CUpti_ActivityMemoryKind kind, uint64_t ts) {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = kind;
  m.correlationId = 800;
  m.address = 0x7f0000001000ULL;
  m.bytes = 268435456;
  m.timestamp = ts;
  m.processId = 4321;
  m.deviceId = 1;
  m.contextId = 7;
  m.streamId = 13;
  return m;
}

}  // namespace fleetscope::agent::testing
