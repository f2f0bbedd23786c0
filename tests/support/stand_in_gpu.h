/* The one identity of a stand-in GPU, shared by every stand-in vendor library of the tests: the
 * NVML the daemon loads (tests/standins/nvml) and the libnvidia-ml.so.1 a lane job loads beside
 * the stand-in libcuda (tests/support/stand_in_cuda). Device index i is named and identified the
 * same way in both, so a lane granted on the daemon's GPU i (FLEETSCOPE_LANE_GPU_UUID) is the
 * device the job's NVML reports, and the lane's NVML view is tested end to end. C, for the C
 * stand-ins. */
#ifndef FLEETSCOPE_TESTS_STAND_IN_GPU_H
#define FLEETSCOPE_TESTS_STAND_IN_GPU_H

#include <stdio.h>

/* NVML_DEVICE_UUID_V2_BUFFER_SIZE is 96; the name buffer 96 too (NVML_DEVICE_NAME_V2_BUFFER_SIZE).
 */
#define FLEETSCOPE_STAND_IN_GPU_TEXT_SIZE 96

static inline int fleetscope_stand_in_gpu_uuid(int index, char* out, unsigned int length) {
  return snprintf(out, length, "GPU-5eed0000-0000-0000-0000-%012d", index);
}

static inline int fleetscope_stand_in_gpu_name(int index, char* out, unsigned int length) {
  return snprintf(out, length, "Stand-in GPU %d", index);
}

#endif
