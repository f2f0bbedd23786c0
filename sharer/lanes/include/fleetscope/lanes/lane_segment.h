#pragma once
// The ledger of one memory lane, in a shared-memory file (by default /dev/shm/fleetscope-lane-ID):
// the lane's capacity, the bytes each member process holds (one slot per process: pid + start
// time), and the gate's "who is waiting" bitmask. Every process of the lane maps the same file.
//
// Updates happen under a process-shared *robust* mutex: when a member is SIGKILLed while holding
// it, the next locker gets EOWNERDEAD, rebuilds the totals from the slots and marks the mutex
// consistent, so the ledger is never left half-updated. A member that dies outside the lock keeps
// its slot until someone needs the room (an admission that would not fit, or a join): slots whose
// process is gone are then reclaimed, and the driver has already freed that process's memory.
//
// Admission is check-and-reserve under the lock, *before* the real allocation: two members can
// never both pass the check for the last free bytes. Reads for memory queries are lock-free.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/lanes/process_identity.h"

namespace fleetscope::lanes {

struct SegmentLayout;  // the shared-memory layout, private to lane_segment.cpp

struct LaneUsage {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t peak_used_bytes = 0;
  uint64_t denied_allocations = 0;
  uint32_t members = 0;
};

struct MemberUsage {
  int slot = -1;
  ProcessIdentity process;
  uint64_t bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t denied_allocations = 0;
  uint64_t steps = 0;         // iteration boundaries the member reported (record_step)
  uint64_t last_step_ns = 0;  // CLOCK_MONOTONIC time of the latest
  bool waiting = false;
};

class LaneSegment {
 public:
  // One bit of the waiting mask per slot.
  static constexpr int kMaxMembers = 64;
  // Longest grant token a ledger keeps.
  static constexpr size_t kMaxTokenLength = 64;
  // Capacity of a lane that only gates (no memory cap).
  static constexpr uint64_t kUnlimited = ~uint64_t{0};

  // `directory`/fleetscope-lane-`lane_id`; the id may hold [A-Za-z0-9._-] only (1..100 chars).
  static bool valid_lane_id(std::string_view lane_id);
  static std::string path_for_lane(std::string_view directory, std::string_view lane_id);

  // Maps the segment at `path`, creating it with `capacity_bytes` when it does not exist yet (an
  // existing segment keeps its capacity: the first creator, normally the daemon, decides). The
  // file is created fully initialised under a temporary name and then linked into place, so no
  // process ever maps a half-initialised ledger. Returns nullptr and sets `error` on failure.
  // `grant_token` (the daemon's): only processes given it may join the lane (token_matches).
  static std::unique_ptr<LaneSegment> open_or_create(const std::string& path,
                                                     uint64_t capacity_bytes, std::string* error,
                                                     const std::string& grant_token = {});
  // 128 random bits from the kernel as 32 hex digits: a lane's grant token (nobody can guess
  // it). What fleetscoped (and `fleetscope-lane-arbiter --grant`) writes into a ledger it makes.
  // Throws std::runtime_error when the kernel gives no randomness.
  static std::string new_grant_token();
  // Maps an existing segment only.
  static std::unique_ptr<LaneSegment> open_existing(const std::string& path, std::string* error);

  ~LaneSegment();
  LaneSegment(const LaneSegment&) = delete;
  LaneSegment& operator=(const LaneSegment&) = delete;

  // A slot for `process` (an existing slot of the same process is returned again); -1 when all
  // slots belong to live processes.
  int join(const ProcessIdentity& process);
  // Gives the slot back; its bytes leave the lane's total.
  void leave(int slot);

  // Reserves `bytes` for `slot` if the lane has room (dead members are reclaimed first when it
  // does not); false, with the slot's denial counted, when the lane is full.
  bool reserve(int slot, uint64_t bytes);
  // Returns up to `bytes` of `slot`'s reservation.
  void release(int slot, uint64_t bytes);

  void set_capacity(uint64_t capacity_bytes);
  uint64_t capacity() const;
  uint64_t used() const;  // lock-free snapshot
  uint64_t slot_bytes(int slot) const;

  // Frees the slots of processes that no longer run; returns how many were reclaimed.
  int reclaim_dead();

  LaneUsage usage() const;
  std::vector<MemberUsage> members() const;

  // Gate hints: a member sets its bit while it waits for a turn; the turn holder checks, with one
  // atomic load, whether anybody else waits before it talks to the arbiter.
  void set_waiting(int slot, bool waiting);
  bool others_waiting(int slot) const;

  // An iteration boundary of the member in `slot` (lock-free, no system call beyond the clock the
  // caller read): the daemon times every job's iterations from these, whether or not the job
  // shares its lane, to judge its slowdown against the unshared baseline.
  void record_step(int slot, uint64_t monotonic_ns);

  // Whether the daemon made this lane with a grant token, and whether `token` is it.
  bool granted() const;
  bool token_matches(std::string_view token) const;

  const std::string& path() const { return path_; }

 private:
  LaneSegment(std::string path, SegmentLayout* layout) : path_(std::move(path)), layout_(layout) {}
  static std::unique_ptr<LaneSegment> map_file(int fd, const std::string& path, std::string* error);
  class Lock;

  std::string path_;
  SegmentLayout* layout_ = nullptr;
};

}  // namespace fleetscope::lanes
