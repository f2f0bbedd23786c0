#pragma once
// The process's side of its lane: its ledger slot, what it allocated (to give the right number of
// bytes back on free), the memory pools it allocates from asynchronously, and its step gate.
// Created on first use from the environment (lane_environment.h); inert when FLEETSCOPE_LANE_ID
// is unset, so the library changes nothing for a job outside a lane.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_abi.h"
#include "fleetscope/lanes/lane_environment.h"
#include "fleetscope/lanes/lane_segment.h"
#include "fleetscope/lanes/step_gate.h"

namespace fleetscope::interpose {

enum class AllocationKind : uint8_t { kDevice, kPoolAsync };

struct Allocation {
  uint64_t bytes = 0;
  AllocationKind kind = AllocationKind::kDevice;
  CUmemoryPool pool = nullptr;
};

class LaneState {
 public:
  static LaneState& instance();

  // Off when the process is in no lane: every wrapper passes straight through.
  bool enforcing() const { return enforcing_; }
  // True when the lane's configuration was wrong: device allocations are refused (a job the
  // daemon meant to cap must not run uncapped next to its neighbours).
  bool broken() const { return broken_; }

  // Charges `bytes` to this process; when the lane is full it first trims this process's own
  // pools (idle memory they still hold) and retries. False: the allocation must fail.
  bool charge(uint64_t bytes);
  void refund(uint64_t bytes);

  void remember(CUdeviceptr pointer, const Allocation& allocation);
  bool forget(CUdeviceptr pointer, Allocation* allocation);
  void remember_handle(CUmemGenericAllocationHandle handle, uint64_t bytes);
  bool forget_handle(CUmemGenericAllocationHandle handle, uint64_t* bytes);

  // Asynchronous (pool) allocations: freed blocks stay charged as the pool's idle memory until the
  // pool is trimmed, because the pool keeps them. Reuse of idle memory costs no new charge.
  uint64_t take_idle(CUmemoryPool pool, uint64_t bytes);  // returns the bytes taken from idle
  void add_idle(CUmemoryPool pool, uint64_t bytes);
  // After the pool was trimmed to `keep_bytes`: refunds the idle memory the pool gave back.
  void pool_trimmed(CUmemoryPool pool, uint64_t keep_bytes);
  // Trims every pool this process allocated from to zero; returns the bytes refunded.
  uint64_t trim_own_pools();
  // The pool cuMemAllocAsync uses now (the current device's current pool), or nullptr.
  CUmemoryPool current_pool() const;

  uint64_t capacity() const;
  uint64_t lane_used() const;
  const std::string& gpu_uuid() const { return assignment_.gpu_uuid; }

  // The iteration gate (nullptr outside a lane).
  lanes::StepGate* gate();

  // At normal process exit: give the ledger slot back (the driver frees the process's memory).
  static void leave_at_exit();

 private:
  LaneState();
  void report(const std::string& message) const;
  void rejoin_after_fork();
  static void before_fork();
  static void after_fork_parent();
  static void after_fork_child();
  void before_handover();

  bool enforcing_ = false;
  bool exiting_ = false;
  bool broken_ = false;
  lanes::LaneAssignment assignment_;
  std::unique_ptr<lanes::LaneSegment> segment_;
  int slot_ = -1;

  std::mutex mutex_;  // guards the maps below, the pools and the gate's creation
  std::unordered_map<CUdeviceptr, Allocation> allocations_;
  std::unordered_map<CUmemGenericAllocationHandle, uint64_t> handles_;
  struct PoolIdle {
    CUmemoryPool pool;
    uint64_t idle_bytes;
  };
  std::vector<PoolIdle> pools_;
  std::unique_ptr<lanes::StepGate> gate_;
};

}  // namespace fleetscope::interpose
