#include "fleetscope/lanes/lane_segment.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace fleetscope::lanes {

namespace {
constexpr uint64_t kMagic = 0x31304e414c534646ull;  // "FFSLAN01" read as little-endian text
constexpr uint32_t kLayoutVersion = 2;              // 2: per-slot step counters
}  // namespace

struct MemberSlotLayout {
  std::atomic<int32_t> pid;  // 0: free
  uint32_t reserved;
  uint64_t start_ticks;
  std::atomic<uint64_t> bytes;  // written under the mutex, read lock-free
  uint64_t peak_bytes;
  uint64_t denied_allocations;
  // Iteration boundaries of the member and the CLOCK_MONOTONIC time of the latest: written by
  // the member alone (lock-free), read by the daemon to time every job's iterations, shared
  // lane or not.
  std::atomic<uint64_t> steps;
  std::atomic<uint64_t> last_step_ns;
};

struct SegmentLayout {
  uint64_t magic;
  uint32_t layout_version;
  uint32_t max_members;
  pthread_mutex_t mutex;  // process-shared, robust
  std::atomic<uint64_t> capacity_bytes;
  std::atomic<uint64_t> used_bytes;  // sum of the slots' bytes; rebuilt after an owner died
  uint64_t peak_used_bytes;
  uint64_t denied_allocations;
  std::atomic<uint64_t> waiting_mask;
  // The grant token of a lane the daemon made (empty: a lane a job or the lanes tool made): only
  // processes given it (FLEETSCOPE_LANE_TOKEN, from the daemon's grant) may join. Written once,
  // before the ledger is linked into place.
  char grant_token[LaneSegment::kMaxTokenLength + 1];
  MemberSlotLayout slots[LaneSegment::kMaxMembers];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the ledger needs address-free atomics");
static_assert(std::atomic<int32_t>::is_always_lock_free, "the ledger needs address-free atomics");

// Holds the segment's mutex; repairs the totals when the previous owner died holding it.
class LaneSegment::Lock {
 public:
  explicit Lock(SegmentLayout* layout) : layout_(layout) {
    int rc = pthread_mutex_lock(&layout_->mutex);
    if (rc == EOWNERDEAD) {
      rebuild_totals();
      pthread_mutex_consistent(&layout_->mutex);
    }
  }
  ~Lock() { pthread_mutex_unlock(&layout_->mutex); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

  // The dead owner was between two stores at most; every slot's own counter is a single store, so
  // the sum of the slots is the truth.
  void rebuild_totals() {
    uint64_t sum = 0;
    for (auto& slot : layout_->slots) {
      if (slot.pid.load(std::memory_order_relaxed) != 0)
        sum += slot.bytes.load(std::memory_order_relaxed);
    }
    layout_->used_bytes.store(sum, std::memory_order_relaxed);
  }

 private:
  SegmentLayout* layout_;
};

bool LaneSegment::valid_lane_id(std::string_view lane_id) {
  if (lane_id.empty() || lane_id.size() > 100) return false;
  if (lane_id == "." || lane_id == "..") return false;
  return std::all_of(lane_id.begin(), lane_id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string LaneSegment::path_for_lane(std::string_view directory, std::string_view lane_id) {
  std::string path(directory);
  if (path.empty()) path = "/dev/shm";
  if (path.back() != '/') path += '/';
  path += "fleetscope-lane-";
  path += lane_id;
  return path;
}

namespace {

bool initialise_layout(SegmentLayout* layout, uint64_t capacity_bytes, const std::string& token,
                       std::string* error) {
  std::memset(static_cast<void*>(layout), 0, sizeof(SegmentLayout));
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  int rc = pthread_mutex_init(&layout->mutex, &attributes);
  pthread_mutexattr_destroy(&attributes);
  if (rc != 0) {
    *error = std::string("pthread_mutex_init: ") + std::strerror(rc);
    return false;
  }
  layout->layout_version = kLayoutVersion;
  layout->max_members = LaneSegment::kMaxMembers;
  layout->capacity_bytes.store(capacity_bytes, std::memory_order_relaxed);
  std::memcpy(layout->grant_token, token.data(),
              std::min(token.size(), size_t{LaneSegment::kMaxTokenLength}));
  std::atomic_thread_fence(std::memory_order_release);
  layout->magic = kMagic;  // last: a segment with the magic is complete
  return true;
}

}  // namespace

std::unique_ptr<LaneSegment> LaneSegment::map_file(int fd, const std::string& path,
                                                   std::string* error) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < sizeof(SegmentLayout)) {
    *error = path + ": not a fleetscope lane segment (size " + std::to_string(info.st_size) +
             ", expected " + std::to_string(sizeof(SegmentLayout)) + ")";
    ::close(fd);
    return nullptr;
  }
  void* memory = ::mmap(nullptr, sizeof(SegmentLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED) {
    *error = path + ": mmap: " + std::strerror(errno);
    return nullptr;
  }
  auto* layout = static_cast<SegmentLayout*>(memory);
  if (layout->magic != kMagic || layout->layout_version != kLayoutVersion ||
      layout->max_members != kMaxMembers) {
    ::munmap(memory, sizeof(SegmentLayout));
    *error = path + ": not a fleetscope lane segment of layout version " +
             std::to_string(kLayoutVersion);
    return nullptr;
  }
  return std::unique_ptr<LaneSegment>(new LaneSegment(path, layout));
}

std::unique_ptr<LaneSegment> LaneSegment::open_existing(const std::string& path,
                                                        std::string* error) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  return map_file(fd, path, error);
}

std::unique_ptr<LaneSegment> LaneSegment::open_or_create(const std::string& path,
                                                         uint64_t capacity_bytes,
                                                         std::string* error,
                                                         const std::string& grant_token) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) return map_file(fd, path, error);
  if (errno != ENOENT) {
    *error = path + ": " + std::strerror(errno);
    return nullptr;
  }
  // Build the complete ledger under a private name, then link it into place: link() fails with
  // EEXIST when another member won the race, and then that member's ledger is used.
  std::string temporary = path + ".init." + std::to_string(::getpid());
  fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = temporary + ": " + std::strerror(errno);
    return nullptr;
  }
  bool ok = ::ftruncate(fd, sizeof(SegmentLayout)) == 0;
  if (!ok) *error = temporary + ": ftruncate: " + std::strerror(errno);
  void* memory =
      ok ? ::mmap(nullptr, sizeof(SegmentLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
         : MAP_FAILED;
  if (ok && memory == MAP_FAILED) {
    ok = false;
    *error = temporary + ": mmap: " + std::strerror(errno);
  }
  if (ok) {
    ok = initialise_layout(static_cast<SegmentLayout*>(memory), capacity_bytes, grant_token, error);
    ::munmap(memory, sizeof(SegmentLayout));
  }
  ::close(fd);
  if (ok && ::link(temporary.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    ok = false;
    *error = path + ": link: " + std::strerror(errno);
  }
  ::unlink(temporary.c_str());
  if (!ok) return nullptr;
  return open_existing(path, error);
}

LaneSegment::~LaneSegment() {
  if (layout_) ::munmap(layout_, sizeof(SegmentLayout));
}

namespace {

bool slot_process_alive(const MemberSlotLayout& slot) {
  ProcessIdentity identity;
  identity.pid = slot.pid.load(std::memory_order_relaxed);
  identity.start_ticks = slot.start_ticks;
  return process_alive(identity);
}

// Frees one slot; the caller holds the mutex.
void free_slot(SegmentLayout* layout, int index) {
  MemberSlotLayout& slot = layout->slots[index];
  uint64_t bytes = slot.bytes.load(std::memory_order_relaxed);
  uint64_t used = layout->used_bytes.load(std::memory_order_relaxed);
  layout->used_bytes.store(used >= bytes ? used - bytes : 0, std::memory_order_relaxed);
  slot.bytes.store(0, std::memory_order_relaxed);
  slot.peak_bytes = 0;
  slot.denied_allocations = 0;
  slot.steps.store(0, std::memory_order_relaxed);
  slot.last_step_ns.store(0, std::memory_order_relaxed);
  slot.start_ticks = 0;
  layout->waiting_mask.fetch_and(~(uint64_t{1} << index), std::memory_order_release);
  slot.pid.store(0, std::memory_order_release);
}

int reclaim_dead_locked(SegmentLayout* layout) {
  int reclaimed = 0;
  for (int i = 0; i < LaneSegment::kMaxMembers; ++i) {
    if (layout->slots[i].pid.load(std::memory_order_relaxed) == 0) continue;
    if (!slot_process_alive(layout->slots[i])) {
      free_slot(layout, i);
      ++reclaimed;
    }
  }
  return reclaimed;
}

}  // namespace

int LaneSegment::join(const ProcessIdentity& process) {
  Lock lock(layout_);
  int free_index = -1;
  for (int i = 0; i < kMaxMembers; ++i) {
    MemberSlotLayout& slot = layout_->slots[i];
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid == process.pid && slot.start_ticks == process.start_ticks) return i;
    if (pid == 0 && free_index < 0) free_index = i;
  }
  if (free_index < 0 && reclaim_dead_locked(layout_) > 0) {
    for (int i = 0; i < kMaxMembers && free_index < 0; ++i) {
      if (layout_->slots[i].pid.load(std::memory_order_relaxed) == 0) free_index = i;
    }
  }
  if (free_index < 0) return -1;
  MemberSlotLayout& slot = layout_->slots[free_index];
  slot.start_ticks = process.start_ticks;
  slot.bytes.store(0, std::memory_order_relaxed);
  slot.peak_bytes = 0;
  slot.denied_allocations = 0;
  slot.pid.store(process.pid, std::memory_order_release);
  return free_index;
}

void LaneSegment::leave(int slot) {
  if (slot < 0 || slot >= kMaxMembers) return;
  Lock lock(layout_);
  free_slot(layout_, slot);
}

bool LaneSegment::reserve(int slot_index, uint64_t bytes) {
  if (slot_index < 0 || slot_index >= kMaxMembers) return false;
  Lock lock(layout_);
  MemberSlotLayout& slot = layout_->slots[slot_index];
  uint64_t capacity = layout_->capacity_bytes.load(std::memory_order_relaxed);
  auto fits = [&] {
    uint64_t used = layout_->used_bytes.load(std::memory_order_relaxed);
    return used <= capacity && bytes <= capacity - used;
  };
  if (!fits() && (reclaim_dead_locked(layout_) == 0 || !fits())) {
    ++slot.denied_allocations;
    ++layout_->denied_allocations;
    return false;
  }
  uint64_t used = layout_->used_bytes.load(std::memory_order_relaxed) + bytes;
  layout_->used_bytes.store(used, std::memory_order_relaxed);
  uint64_t mine = slot.bytes.load(std::memory_order_relaxed) + bytes;
  slot.bytes.store(mine, std::memory_order_relaxed);
  slot.peak_bytes = std::max(slot.peak_bytes, mine);
  layout_->peak_used_bytes = std::max(layout_->peak_used_bytes, used);
  return true;
}

void LaneSegment::release(int slot_index, uint64_t bytes) {
  if (slot_index < 0 || slot_index >= kMaxMembers) return;
  Lock lock(layout_);
  MemberSlotLayout& slot = layout_->slots[slot_index];
  uint64_t mine = slot.bytes.load(std::memory_order_relaxed);
  bytes = std::min(bytes, mine);
  slot.bytes.store(mine - bytes, std::memory_order_relaxed);
  uint64_t used = layout_->used_bytes.load(std::memory_order_relaxed);
  layout_->used_bytes.store(used >= bytes ? used - bytes : 0, std::memory_order_relaxed);
}

void LaneSegment::set_capacity(uint64_t capacity_bytes) {
  Lock lock(layout_);
  layout_->capacity_bytes.store(capacity_bytes, std::memory_order_relaxed);
}

uint64_t LaneSegment::capacity() const {
  return layout_->capacity_bytes.load(std::memory_order_relaxed);
}

uint64_t LaneSegment::used() const {
  return layout_->used_bytes.load(std::memory_order_relaxed);
}

uint64_t LaneSegment::slot_bytes(int slot) const {
  if (slot < 0 || slot >= kMaxMembers) return 0;
  return layout_->slots[slot].bytes.load(std::memory_order_relaxed);
}

int LaneSegment::reclaim_dead() {
  Lock lock(layout_);
  return reclaim_dead_locked(layout_);
}

LaneUsage LaneSegment::usage() const {
  Lock lock(layout_);
  LaneUsage usage;
  usage.capacity_bytes = layout_->capacity_bytes.load(std::memory_order_relaxed);
  usage.used_bytes = layout_->used_bytes.load(std::memory_order_relaxed);
  usage.peak_used_bytes = layout_->peak_used_bytes;
  usage.denied_allocations = layout_->denied_allocations;
  for (const auto& slot : layout_->slots) {
    if (slot.pid.load(std::memory_order_relaxed) != 0) ++usage.members;
  }
  return usage;
}

std::vector<MemberUsage> LaneSegment::members() const {
  Lock lock(layout_);
  std::vector<MemberUsage> result;
  uint64_t waiting = layout_->waiting_mask.load(std::memory_order_relaxed);
  for (int i = 0; i < kMaxMembers; ++i) {
    const MemberSlotLayout& slot = layout_->slots[i];
    int32_t pid = slot.pid.load(std::memory_order_relaxed);
    if (pid == 0) continue;
    MemberUsage member;
    member.slot = i;
    member.process = {pid, slot.start_ticks};
    member.bytes = slot.bytes.load(std::memory_order_relaxed);
    member.peak_bytes = slot.peak_bytes;
    member.denied_allocations = slot.denied_allocations;
    member.steps = slot.steps.load(std::memory_order_acquire);
    member.last_step_ns = slot.last_step_ns.load(std::memory_order_relaxed);
    member.waiting = (waiting >> i) & 1u;
    result.push_back(member);
  }
  return result;
}

void LaneSegment::set_waiting(int slot, bool waiting) {
  if (slot < 0 || slot >= kMaxMembers) return;
  uint64_t bit = uint64_t{1} << slot;
  if (waiting) {
    layout_->waiting_mask.fetch_or(bit, std::memory_order_acq_rel);
  } else {
    layout_->waiting_mask.fetch_and(~bit, std::memory_order_acq_rel);
  }
}

std::string LaneSegment::new_grant_token() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("getrandom: cannot make a lane grant token");
    got += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

bool LaneSegment::granted() const {
  return layout_->grant_token[0] != '\0';
}

bool LaneSegment::token_matches(std::string_view token) const {
  const std::string_view own(layout_->grant_token,
                             ::strnlen(layout_->grant_token, kMaxTokenLength));
  // Constant time over the stored token: the comparison does not tell how much of a guess was
  // right.
  unsigned char differ = own.size() != token.size();
  for (size_t i = 0; i < own.size(); ++i)
    differ |= static_cast<unsigned char>(own[i] ^ (i < token.size() ? token[i] : 0));
  return differ == 0 && !own.empty();
}

void LaneSegment::record_step(int slot, uint64_t monotonic_ns) {
  if (slot < 0 || slot >= kMaxMembers) return;
  MemberSlotLayout& member = layout_->slots[slot];
  member.last_step_ns.store(monotonic_ns, std::memory_order_relaxed);
  member.steps.fetch_add(1, std::memory_order_release);  // the time is visible with the count
}

bool LaneSegment::others_waiting(int slot) const {
  uint64_t mask = layout_->waiting_mask.load(std::memory_order_acquire);
  if (slot >= 0 && slot < kMaxMembers) mask &= ~(uint64_t{1} << slot);
  return mask != 0;
}

}  // namespace fleetscope::lanes
