/* fleetscope step API: mark iteration boundaries so a job sharing a GPU lane takes turns with its
 * lane mates at the right moment. C and C++, header only, no link dependency.
 *
 *   #include <fleetscope/step.h>
 *   for (...) { fleetscope_step(); train_one_iteration(); }
 *
 * Without fleetscope (the job was not started in a lane, libfleetscope_lanes.so is not preloaded)
 * every call is a no-op costing one well-predicted branch: the implementation is looked up once
 * with dlsym(RTLD_DEFAULT, ...) and is simply absent. In a lane, fleetscope_step() returns at once
 * while no lane mate waits; otherwise it hands the turn over and returns when the lane's policy
 * gives it back. NVTX step ranges and this call are equivalent boundaries (docs/sharer.md). */
#ifndef FLEETSCOPE_STEP_H
#define FLEETSCOPE_STEP_H

#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*fleetscope_step_fn)(void);
typedef void (*fleetscope_step_total_fn)(unsigned long long);

/* Resolves `name` once per call site; a null result means "no fleetscope" and stays cached. The
 * handle is RTLD_DEFAULT, written as (void*)0 so C callers need no _GNU_SOURCE. The object pointer
 * dlsym returns is copied into the function pointer byte for byte (the POSIX idiom that ISO C
 * accepts; a cast would not be). */
static inline void fleetscope_step_lookup_(void** cache, int* resolved, const char* name,
                                           void* function, unsigned long size) {
  void* found;
  if (!__atomic_load_n(resolved, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(cache, dlsym((void*)0, name), __ATOMIC_RELAXED);
    __atomic_store_n(resolved, 1, __ATOMIC_RELEASE);
  }
  found = __atomic_load_n(cache, __ATOMIC_RELAXED);
  __builtin_memcpy(function, &found, size);
}

/* An iteration boundary: the end of one training/inference step and the start of the next. */
static inline void fleetscope_step(void) {
  static void* cache;
  static int resolved;
  fleetscope_step_fn fn;
  fleetscope_step_lookup_(&cache, &resolved, "fleetscope_step_boundary", &fn, sizeof fn);
  if (fn) fn();
}

/* Gives the turn back until the next boundary (call before a long phase that is not an iteration,
 * e.g. evaluation or checkpointing, so lane mates are not held up). */
static inline void fleetscope_step_release(void) {
  static void* cache;
  static int resolved;
  fleetscope_step_fn fn;
  fleetscope_step_lookup_(&cache, &resolved, "fleetscope_step_release", &fn, sizeof fn);
  if (fn) fn();
}

/* The job's total number of steps, for the SRTF policy's remaining-time estimate. */
static inline void fleetscope_step_set_total(unsigned long long total_steps) {
  static void* cache;
  static int resolved;
  fleetscope_step_total_fn fn;
  fleetscope_step_lookup_(&cache, &resolved, "fleetscope_step_set_total", &fn, sizeof fn);
  if (fn) fn(total_steps);
}

#ifdef __cplusplus
}
#endif

#endif /* FLEETSCOPE_STEP_H */
