#include "lane_state.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "hook_table.h"
#include "real_symbols.h"

namespace fleetscope::interpose {

namespace {

template <typename Function>
Function helper(std::atomic<void*>& cache, const char* name) {
  void* known = cache.load(std::memory_order_acquire);
  if (!known) {
    known = real_cuda_symbol(name);
    cache.store(known, std::memory_order_release);
  }
  return reinterpret_cast<Function>(known);
}

std::atomic<void*> g_ctx_get_device{nullptr};
std::atomic<void*> g_device_get_mem_pool{nullptr};
std::atomic<void*> g_mem_pool_get_attribute{nullptr};
std::atomic<void*> g_ctx_synchronize{nullptr};

}  // namespace

namespace {
std::atomic<LaneState*> g_created{nullptr};
}

LaneState& LaneState::instance() {
  // Never destroyed: wrappers may run from other libraries' destructors at exit.
  static LaneState* state = [] {
    auto* created = new LaneState();
    g_created.store(created, std::memory_order_release);
    return created;
  }();
  return *state;
}

void LaneState::leave_at_exit() {
  LaneState* state = g_created.load(std::memory_order_acquire);
  if (!state || !state->segment_ || state->slot_ < 0) return;
  std::lock_guard lock(state->mutex_);
  state->exiting_ = true;
  state->segment_->leave(state->slot_);
  state->slot_ = -1;
}

__attribute__((destructor)) static void leave_lane_at_exit() {
  LaneState::leave_at_exit();
}

void LaneState::report(const std::string& message) const {
  std::fprintf(stderr, "fleetscope lanes [pid %d]: %s\n", static_cast<int>(::getpid()),
               message.c_str());
}

LaneState::LaneState() {
  std::string error;
  auto assignment = lanes::assignment_from_environment(&error);
  if (!assignment) {
    if (!error.empty()) {
      enforcing_ = broken_ = true;
      report(error + "; refusing device allocations");
    }
    return;
  }
  assignment_ = *assignment;
  enforcing_ = true;
  std::string path =
      lanes::LaneSegment::path_for_lane(assignment_.ledger_directory, assignment_.lane_id);
  // Only fleetscoped makes lanes: it writes the ledger, with the lane's size and a grant token,
  // before the job starts, and hands the token to that job alone (FLEETSCOPE_LANE_TOKEN). This
  // process joins a lane only with that token and never makes a ledger itself, so a job can
  // neither pick its own lane and size nor walk into another job's lane.
  if (assignment_.token.empty()) {
    broken_ = true;
    report("lane '" + assignment_.lane_id + "' asked for without a grant (" +
           std::string(lanes::kLaneTokenVariable) +
           " unset): only fleetscoped grants lanes (`fleetscope run --share`); refusing device "
           "allocations");
    return;
  }
  segment_ = lanes::LaneSegment::open_existing(path, &error);
  if (!segment_) {
    broken_ = true;
    report("lane '" + assignment_.lane_id + "' is not a lane fleetscoped granted (" + error +
           "); refusing device allocations");
    return;
  }
  if (!segment_->token_matches(assignment_.token)) {
    broken_ = true;
    report("lane '" + assignment_.lane_id + "' was granted by fleetscoped to other jobs (" +
           std::string(lanes::kLaneTokenVariable) +
           " does not match); refusing device allocations");
    return;
  }
  slot_ = segment_->join(lanes::current_process());
  if (slot_ < 0) {
    broken_ = true;
    report("lane '" + assignment_.lane_id + "' has " +
           std::to_string(lanes::LaneSegment::kMaxMembers) +
           " live members already; refusing device allocations");
    return;
  }
  if (const char* log = std::getenv(lanes::kLanesLogVariable); log && *log == '1') {
    report("joined lane '" + assignment_.lane_id + "' (" + path + ", capacity " +
           std::to_string(segment_->capacity()) + " bytes) in slot " + std::to_string(slot_));
  }
  pthread_atfork(&LaneState::before_fork, &LaneState::after_fork_parent,
                 &LaneState::after_fork_child);
}

void LaneState::before_fork() {
  instance().mutex_.lock();
}

void LaneState::after_fork_parent() {
  instance().mutex_.unlock();
}

void LaneState::after_fork_child() {
  // The child is a new member: none of the parent's allocations, pools or gate connection are its.
  LaneState& state = instance();
  state.allocations_.clear();
  state.handles_.clear();
  state.pools_.clear();
  state.gate_.release();  // the parent's connection: leak the object, never talk on its socket
  state.slot_ = -1;
  state.mutex_.unlock();
}

void LaneState::rejoin_after_fork() {
  if (slot_ >= 0 || !segment_ || exiting_) return;
  slot_ = segment_->join(lanes::current_process());
  if (slot_ < 0) broken_ = true;
}

bool LaneState::charge(uint64_t bytes) {
  if (!enforcing_ || exiting_) return true;
  if (broken_) return false;
  rejoin_after_fork();
  if (slot_ < 0) return false;
  if (bytes == 0 || segment_->reserve(slot_, bytes)) return true;
  return trim_own_pools() > 0 && segment_->reserve(slot_, bytes);
}

void LaneState::refund(uint64_t bytes) {
  if (!enforcing_ || broken_ || slot_ < 0 || bytes == 0) return;
  segment_->release(slot_, bytes);
}

void LaneState::remember(CUdeviceptr pointer, const Allocation& allocation) {
  std::lock_guard lock(mutex_);
  allocations_[pointer] = allocation;
}

bool LaneState::forget(CUdeviceptr pointer, Allocation* allocation) {
  std::lock_guard lock(mutex_);
  auto found = allocations_.find(pointer);
  if (found == allocations_.end()) return false;
  *allocation = found->second;
  allocations_.erase(found);
  return true;
}

void LaneState::remember_handle(CUmemGenericAllocationHandle handle, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  handles_[handle] = bytes;
}

bool LaneState::forget_handle(CUmemGenericAllocationHandle handle, uint64_t* bytes) {
  std::lock_guard lock(mutex_);
  auto found = handles_.find(handle);
  if (found == handles_.end()) return false;
  *bytes = found->second;
  handles_.erase(found);
  return true;
}

uint64_t LaneState::take_idle(CUmemoryPool pool, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  for (auto& entry : pools_) {
    if (entry.pool != pool) continue;
    uint64_t taken = std::min(entry.idle_bytes, bytes);
    entry.idle_bytes -= taken;
    return taken;
  }
  return 0;
}

void LaneState::add_idle(CUmemoryPool pool, uint64_t bytes) {
  if (!pool) {
    refund(bytes);  // a pool we cannot name cannot be trimmed: give the charge back at once
    return;
  }
  std::lock_guard lock(mutex_);
  for (auto& entry : pools_) {
    if (entry.pool == pool) {
      entry.idle_bytes += bytes;
      return;
    }
  }
  pools_.push_back({pool, bytes});
}

void LaneState::pool_trimmed(CUmemoryPool pool, uint64_t keep_bytes) {
  // What the pool still holds idle: reserved minus used, when the driver tells us.
  uint64_t driver_idle = keep_bytes;
  auto get_attribute =
      helper<cuMemPoolGetAttribute_t>(g_mem_pool_get_attribute, "cuMemPoolGetAttribute");
  cuuint64_t reserved = 0, used = 0;
  if (get_attribute &&
      get_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) == CUDA_SUCCESS &&
      get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS) {
    driver_idle = reserved > used ? reserved - used : 0;
  }
  uint64_t refunded = 0;
  {
    std::lock_guard lock(mutex_);
    for (auto& entry : pools_) {
      if (entry.pool != pool) continue;
      uint64_t still_idle = std::min(entry.idle_bytes, driver_idle);
      refunded = entry.idle_bytes - still_idle;
      entry.idle_bytes = still_idle;
    }
  }
  refund(refunded);
}

uint64_t LaneState::trim_own_pools() {
  std::vector<CUmemoryPool> idle_pools;
  {
    std::lock_guard lock(mutex_);
    for (const auto& entry : pools_) {
      if (entry.idle_bytes > 0) idle_pools.push_back(entry.pool);
    }
  }
  auto trim = real_function<cuMemPoolTrimTo_t>(Hook::kMemPoolTrimTo);
  if (!trim || idle_pools.empty()) return 0;
  uint64_t before = segment_ ? segment_->slot_bytes(slot_) : 0;
  for (CUmemoryPool pool : idle_pools) {
    if (trim(pool, 0) == CUDA_SUCCESS) pool_trimmed(pool, 0);
  }
  uint64_t after = segment_ ? segment_->slot_bytes(slot_) : 0;
  return before > after ? before - after : 0;
}

CUmemoryPool LaneState::current_pool() const {
  auto get_device = helper<cuCtxGetDevice_t>(g_ctx_get_device, "cuCtxGetDevice");
  auto get_pool = helper<cuDeviceGetMemPool_t>(g_device_get_mem_pool, "cuDeviceGetMemPool");
  CUdevice device = 0;
  CUmemoryPool pool = nullptr;
  if (!get_device || !get_pool || get_device(&device) != CUDA_SUCCESS ||
      get_pool(&pool, device) != CUDA_SUCCESS) {
    return nullptr;
  }
  return pool;
}

uint64_t LaneState::capacity() const {
  return segment_ ? segment_->capacity() : lanes::LaneSegment::kUnlimited;
}

uint64_t LaneState::lane_used() const {
  return segment_ ? segment_->used() : 0;
}

void LaneState::before_handover() {
  // The next member's iteration must find this one's ephemeral memory free: finish our queued
  // work (its frees included), then give the pools' idle memory back to the device.
  if (auto synchronize = helper<cuCtxSynchronize_t>(g_ctx_synchronize, "cuCtxSynchronize"))
    synchronize();
  trim_own_pools();
}

lanes::StepGate* LaneState::gate() {
  if (!enforcing_ || broken_) return nullptr;
  std::lock_guard lock(mutex_);
  rejoin_after_fork();
  if (!gate_) {
    lanes::StepGateSettings settings;
    settings.socket_path = assignment_.gate_socket;
    settings.lane_id = assignment_.lane_id;
    settings.priority = assignment_.priority;
    settings.total_steps = assignment_.total_steps;
    gate_ = std::make_unique<lanes::StepGate>(settings, segment_.get(), slot_,
                                              [this] { before_handover(); });
  }
  return gate_.get();
}

}  // namespace fleetscope::interpose
