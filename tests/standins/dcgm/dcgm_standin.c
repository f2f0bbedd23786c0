/* Stand-in for libdcgm (DCGM 4's libdcgm.so.4) with the real entry points and struct layouts of
 * dcgm_agent.h / dcgm_structs.h, so the daemon's DCGM sampler is tested through its real dlopen
 * path (by file name, or by soname through LD_LIBRARY_PATH) on machines without DCGM.
 * What it reports comes from the environment:
 *   FLEETSCOPE_DCGM_STANDIN_GPUS  number of supported GPUs (default 2)
 *   FLEETSCOPE_DCGM_STANDIN_LOG   file to which every watch and unwatch is appended as a line
 *                                 "watch gpu=N" / "unwatch gpu=N" (for tests in another process)
 * A watched GPU g reports SM active 0.5+0.01g, SM occupancy 0.25+0.01g, tensor active
 * 0.125+0.01g; an unwatched one DCGM_ST_NOT_WATCHED. dcgm_standin_watches(g) and
 * dcgm_standin_unwatches(g) count the calls for tests in the same process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int dcgmReturn_t;
typedef uintptr_t dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t;

#define DCGM_ST_OK 0
#define DCGM_ST_BADPARAM (-1)
#define DCGM_ST_UNINITIALIZED (-10)
#define DCGM_ST_NOT_WATCHED (-16)
#define DCGM_MAX_NUM_DEVICES 32
#define DCGM_GROUP_EMPTY 1
#define MAX_GROUPS 64
#define MAX_FIELDS 16

typedef struct {
  unsigned int version;
  unsigned short fieldId;
  unsigned short fieldType;
  int status;
  int64_t ts;
  union {
    int64_t i64;
    double dbl;
    char str[256];
    char blob[4096];
  } value;
} dcgmFieldValue_v1;
typedef int (*dcgmFieldValueEnumeration_f)(unsigned int, dcgmFieldValue_v1*, int, void*);

static int initialized, started, gpu_count;
static struct {
  int used;
  int gpu;
  int watched;
} groups[MAX_GROUPS + 1]; /* ids 1..MAX_GROUPS */
static struct {
  int used;
  int count;
  unsigned short ids[MAX_FIELDS];
} field_groups[MAX_GROUPS + 1];
static int watches[DCGM_MAX_NUM_DEVICES], unwatches[DCGM_MAX_NUM_DEVICES];
static int64_t now_us = 1700000000000000LL;

static void log_call(const char* what, int gpu) {
  const char* path = getenv("FLEETSCOPE_DCGM_STANDIN_LOG");
  if (!path || !*path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s gpu=%d\n", what, gpu);
  fclose(f);
}

int dcgm_standin_watches(int gpu) {
  return gpu >= 0 && gpu < DCGM_MAX_NUM_DEVICES ? watches[gpu] : -1;
}
int dcgm_standin_unwatches(int gpu) {
  return gpu >= 0 && gpu < DCGM_MAX_NUM_DEVICES ? unwatches[gpu] : -1;
}

const char* errorString(dcgmReturn_t result) {
  switch (result) {
    case DCGM_ST_OK:
      return "Success";
    case DCGM_ST_BADPARAM:
      return "Bad parameter passed to function";
    case DCGM_ST_UNINITIALIZED:
      return "Object is in undefined state";
    case DCGM_ST_NOT_WATCHED:
      return "Field is not being updated";
    default:
      return "Unknown error";
  }
}

dcgmReturn_t dcgmInit(void) {
  const char* n = getenv("FLEETSCOPE_DCGM_STANDIN_GPUS");
  gpu_count = n ? atoi(n) : 2;
  if (gpu_count < 0) gpu_count = 0;
  if (gpu_count > DCGM_MAX_NUM_DEVICES) gpu_count = DCGM_MAX_NUM_DEVICES;
  initialized = 1;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmShutdown(void) {
  if (!initialized) return DCGM_ST_UNINITIALIZED;
  initialized = started = 0;
  memset(groups, 0, sizeof groups);
  memset(field_groups, 0, sizeof field_groups);
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmStartEmbedded(int opMode, dcgmHandle_t* handle) {
  if (!initialized) return DCGM_ST_UNINITIALIZED;
  if (!handle || (opMode != 1 && opMode != 2)) return DCGM_ST_BADPARAM;
  started = 1;
  *handle = 0x5eed;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t handle) {
  if (!started || handle != 0x5eed) return DCGM_ST_BADPARAM;
  started = 0;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmConnect(const char* address, dcgmHandle_t* handle) {
  if (!initialized) return DCGM_ST_UNINITIALIZED;
  if (!address || !handle) return DCGM_ST_BADPARAM;
  started = 1;
  *handle = 0x5eed;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmDisconnect(dcgmHandle_t handle) {
  return dcgmStopEmbedded(handle);
}

static int valid(dcgmHandle_t handle) {
  return initialized && started && handle == 0x5eed;
}

dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t handle, unsigned int ids[DCGM_MAX_NUM_DEVICES],
                                        int* count) {
  if (!valid(handle) || !ids || !count) return DCGM_ST_BADPARAM;
  for (int i = 0; i < gpu_count; ++i) ids[i] = (unsigned int)i;
  *count = gpu_count;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmGroupCreate(dcgmHandle_t handle, int type, const char* name, dcgmGpuGrp_t* id) {
  if (!valid(handle) || type != DCGM_GROUP_EMPTY || !name || !id) return DCGM_ST_BADPARAM;
  for (int g = 1; g <= MAX_GROUPS; ++g)
    if (!groups[g].used) {
      groups[g].used = 1;
      groups[g].gpu = -1;
      groups[g].watched = 0;
      *id = (dcgmGpuGrp_t)g;
      return DCGM_ST_OK;
    }
  return DCGM_ST_BADPARAM;
}

static int group_ok(dcgmGpuGrp_t id) {
  return id >= 1 && id <= MAX_GROUPS && groups[id].used;
}
static int field_group_ok(dcgmFieldGrp_t id) {
  return id >= 1 && id <= MAX_GROUPS && field_groups[id].used;
}

dcgmReturn_t dcgmGroupAddDevice(dcgmHandle_t handle, dcgmGpuGrp_t id, unsigned int gpu) {
  /* One GPU per group is all the daemon makes; that is all this stand-in keeps. */
  if (!valid(handle) || !group_ok(id) || (int)gpu >= gpu_count || groups[id].gpu >= 0)
    return DCGM_ST_BADPARAM;
  groups[id].gpu = (int)gpu;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t handle, dcgmGpuGrp_t id) {
  if (!valid(handle) || !group_ok(id)) return DCGM_ST_BADPARAM;
  groups[id].used = 0;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t handle, int count, unsigned short* ids,
                                  const char* name, dcgmFieldGrp_t* id) {
  if (!valid(handle) || count <= 0 || count > MAX_FIELDS || !ids || !name || !id)
    return DCGM_ST_BADPARAM;
  for (int g = 1; g <= MAX_GROUPS; ++g)
    if (!field_groups[g].used) {
      field_groups[g].used = 1;
      field_groups[g].count = count;
      memcpy(field_groups[g].ids, ids, sizeof(unsigned short) * (size_t)count);
      *id = (dcgmFieldGrp_t)g;
      return DCGM_ST_OK;
    }
  return DCGM_ST_BADPARAM;
}

dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t handle, dcgmFieldGrp_t id) {
  if (!valid(handle) || !field_group_ok(id)) return DCGM_ST_BADPARAM;
  field_groups[id].used = 0;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmWatchFields(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fields,
                             long long updateFreq, double maxKeepAge, int maxKeepSamples) {
  if (!valid(handle) || !group_ok(group) || !field_group_ok(fields) || groups[group].gpu < 0 ||
      updateFreq <= 0 || maxKeepAge <= 0 || maxKeepSamples < 0)
    return DCGM_ST_BADPARAM;
  groups[group].watched = 1;
  ++watches[groups[group].gpu];
  log_call("watch", groups[group].gpu);
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fields) {
  if (!valid(handle) || !group_ok(group) || !field_group_ok(fields)) return DCGM_ST_BADPARAM;
  groups[group].watched = 0;
  ++unwatches[groups[group].gpu];
  log_call("unwatch", groups[group].gpu);
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t handle, int waitForUpdate) {
  if (!valid(handle) || (waitForUpdate != 0 && waitForUpdate != 1)) return DCGM_ST_BADPARAM;
  now_us += 1000000;
  return DCGM_ST_OK;
}

dcgmReturn_t dcgmGetLatestValues(dcgmHandle_t handle, dcgmGpuGrp_t group, dcgmFieldGrp_t fields,
                                 dcgmFieldValueEnumeration_f callback, void* user) {
  if (!valid(handle) || !group_ok(group) || !field_group_ok(fields) || !callback ||
      groups[group].gpu < 0)
    return DCGM_ST_BADPARAM;
  int gpu = groups[group].gpu, count = field_groups[fields].count;
  dcgmFieldValue_v1 values[MAX_FIELDS];
  memset(values, 0, sizeof values);
  for (int i = 0; i < count; ++i) {
    dcgmFieldValue_v1* v = &values[i];
    v->version = (unsigned int)(sizeof(dcgmFieldValue_v1) | (1u << 24));
    v->fieldId = field_groups[fields].ids[i];
    v->fieldType = 'd';
    v->ts = now_us;
    v->status = groups[group].watched ? DCGM_ST_OK : DCGM_ST_NOT_WATCHED;
    double base = v->fieldId == 1002   ? 0.5
                  : v->fieldId == 1003 ? 0.25
                  : v->fieldId == 1004 ? 0.125
                                       : 0;
    v->value.dbl = base + 0.01 * gpu;
  }
  callback((unsigned int)gpu, values, count, user);
  return DCGM_ST_OK;
}
