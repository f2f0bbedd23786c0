/* Stand-in for libnvidia-ml (NVML) with the real entry points and struct layouts of nvml.h, so the
 * daemon's sampler is tested through its real dlopen path on machines without a driver.
 * What it reports comes from the environment:
 *   FLEETSCOPE_NVML_STANDIN_DEVICES    number of GPUs (default 2)
 *   FLEETSCOPE_NVML_STANDIN_PROCESSES  "DEV:PID:MEM_BYTES:SM_PCT,..." compute processes
 *   FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE  a file holding the same list, read again on every
 *                                      query (for tests that learn their jobs' pids after the
 *                                      daemon started); it replaces the variable's list
 *   FLEETSCOPE_NVML_STANDIN_FAIL_INIT  set: nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 * Device d reports utilization 20+30*d %, 80 GiB total, power (250+10*d) W, SM clock 1410 MHz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stand_in_gpu.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_UNINITIALIZED 1
#define MAX_DEVICES 16
#define MAX_PROCESSES 64

struct standin_process {
  int device;
  unsigned int pid;
  unsigned long long memory;
  unsigned int sm;
};

static struct nvmlDevice_st { int index; } devices[MAX_DEVICES];
static struct standin_process processes[MAX_PROCESSES];
static int device_count, process_count, initialized;
static unsigned long long clock_us = 1000;

static int index_of(nvmlDevice_t device) {
  if (!initialized || device < devices || device >= devices + device_count) return -1;
  return device->index;
}

static void parse_processes(const char* list) {
  process_count = 0;
  while (list && *list && process_count < MAX_PROCESSES) {
    struct standin_process p;
    if (sscanf(list, "%d:%u:%llu:%u", &p.device, &p.pid, &p.memory, &p.sm) == 4)
      processes[process_count++] = p;
    list = strchr(list, ',');
    if (list) ++list;
  }
}

/* The list in FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE, when it names one that exists. */
static void reread_process_file(void) {
  const char* path = getenv("FLEETSCOPE_NVML_STANDIN_PROCESSES_FILE");
  if (!path || !*path) return;
  FILE* file = fopen(path, "r");
  if (!file) return;
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, file);
  fclose(file);
  text[n] = 0;
  parse_processes(text);
}

nvmlReturn_t nvmlInit_v2(void) {
  const char* fail = getenv("FLEETSCOPE_NVML_STANDIN_FAIL_INIT");
  if (fail && *fail) return NVML_ERROR_DRIVER_NOT_LOADED;
  const char* count = getenv("FLEETSCOPE_NVML_STANDIN_DEVICES");
  device_count = count ? atoi(count) : 2;
  if (device_count < 0) device_count = 0;
  if (device_count > MAX_DEVICES) device_count = MAX_DEVICES;
  for (int i = 0; i < device_count; ++i) devices[i].index = i;
  parse_processes(getenv("FLEETSCOPE_NVML_STANDIN_PROCESSES"));
  initialized = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  initialized = 0;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned int)device_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (index >= (unsigned int)device_count) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  fleetscope_stand_in_gpu_name(i, name, length);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  fleetscope_stand_in_gpu_uuid(i, uuid, length);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  utilization->gpu = (unsigned int)(20 + 30 * i) % 101;
  utilization->memory = 10;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  reread_process_file();
  memory->total = 80ULL << 30;
  memory->used = 0;
  for (int k = 0; k < process_count; ++k)
    if (processes[k].device == i) memory->used += processes[k].memory;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* milliwatts) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  *milliwatts = (unsigned int)(250 + 10 * i) * 1000u;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* mhz) {
  int i = index_of(device);
  if (i < 0 || type < 0 || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
  *mhz = type == 2 ? 1593u : 1410u;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  int i = index_of(device);
  if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
  reread_process_file();
  unsigned int n = 0;
  for (int k = 0; k < process_count; ++k)
    if (processes[k].device == i) ++n;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  n = 0;
  for (int k = 0; k < process_count; ++k)
    if (processes[k].device == i) {
      infos[n].pid = processes[k].pid;
      infos[n].usedGpuMemory = processes[k].memory;
      infos[n].gpuInstanceId = infos[n].computeInstanceId = 0xFFFFFFFFu;
      ++n;
    }
  *count = n;
  return NVML_SUCCESS;
}

/* Like the driver: a NULL buffer asks for the count (INSUFFICIENT_SIZE); only samples newer than
 * lastSeenTimeStamp come back. Each call produces one fresh sample per process. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* samples,
                                             unsigned int* count, unsigned long long last_seen) {
  int i = index_of(device);
  if (i < 0 || !count) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int n = 0;
  for (int k = 0; k < process_count; ++k)
    if (processes[k].device == i) ++n;
  if (!samples || *count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  clock_us += 1000;
  n = 0;
  for (int k = 0; k < process_count; ++k)
    if (processes[k].device == i && clock_us > last_seen) {
      samples[n].pid = processes[k].pid;
      samples[n].timeStamp = clock_us;
      samples[n].smUtil = processes[k].sm;
      samples[n].memUtil = samples[n].encUtil = samples[n].decUtil = 0;
      ++n;
    }
  *count = n;
  return NVML_SUCCESS;
}
