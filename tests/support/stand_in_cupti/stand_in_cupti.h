// Test controls of the stand-in CUPTI (libcupti.so.13 built from stand_in_cupti.cpp). The library
// exports the real CUPTI entry points the agent uses, with CUPTI's rules (one subscriber, 8-byte
// aligned client buffers, records dropped and counted when a buffer request is declined, forced
// flushes returning in-flight records incomplete), and these extra functions through which a test
// program plays a CUDA application: each "CUDA call" runs the subscriber's API callbacks and
// writes the activity records the enabled kinds ask for into the client's buffers. Full buffers are
// handed back on the stand-in's own completion thread, like CUPTI's.
#pragma once

#include <stdint.h>

extern "C" {

struct StandInState {
  int subscribers;             // 0 or 1
  int activity_kinds_enabled;  // how many kinds are enabled now
  int callbacks_registered;    // buffer callbacks registered (1) or not (0)
  int64_t finalize_calls;
  int64_t finalize_in_api_exit;  // of which from inside an API-exit callback
  int64_t buffers_requested;
  int64_t buffers_declined;   // the client returned no buffer
  int64_t buffers_completed;  // handed back to the client
  int64_t records_written;    // into client buffers
  int64_t records_dropped;    // lost for want of a buffer (all time)
  int64_t kernels_delivered;  // kernel records in buffers handed back so far
};

// cudaLaunchKernel: runtime API callbacks, a RUNTIME record and a CONCURRENT_KERNEL record.
// `incomplete`: the kernel is still running when the buffer is flushed (end = 0).
void standin_launch_kernel(const char* name, int incomplete);
// Any other runtime call (callbacks and a RUNTIME record), e.g. cudaGetDevice.
void standin_runtime_call(uint32_t cbid);
// nvtxRangePushA / nvtxRangePop: NVTX callbacks and MARKER records.
void standin_nvtx_push(const char* message);
void standin_nvtx_pop(void);
// How long after the pop's callbacks returned the range's END marker is recorded (default 0: at
// once). CUPTI does not document whether an NVTX range's record is written before or after the
// callbacks: with a lag, a subscriber that disables activity from inside the pop's callback (or
// from another thread it wakes) reliably misses that END marker.
void standin_set_end_marker_lag_us(int lag_us);
// While held, full buffers stay with the stand-in (a client that is not given its buffers back
// cannot reuse them: its pool fills up).
void standin_hold_completions(int hold);
void standin_get_state(StandInState* state);
}
