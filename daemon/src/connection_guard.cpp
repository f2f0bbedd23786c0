#include "fleetscope/daemon/connection_guard.h"

#include <sys/socket.h>

#include <algorithm>
#include <optional>

namespace fleetscope::daemon {
namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ConnectionLimits effective_limits(ConnectionLimits wanted, int64_t open_files_limit,
                                  int64_t reserved_files) {
  if (open_files_limit > 0) {
    int64_t room = std::max<int64_t>(open_files_limit - reserved_files, 8);
    wanted.max_connections = static_cast<int>(std::min<int64_t>(wanted.max_connections, room));
  }
  wanted.max_connections = std::max(wanted.max_connections, 1);
  wanted.max_connections_per_uid =
      std::clamp(wanted.max_connections_per_uid, 1, wanted.max_connections);
  return wanted;
}

ConnectionTicket::ConnectionTicket(std::shared_ptr<ConnectionLimiter> owner, uid_t uid, int fd)
    : owner_(std::move(owner)), uid_(uid), fd_(fd) {}

ConnectionTicket::~ConnectionTicket() {
  owner_->forget(this);
}

void ConnectionTicket::set_idle(bool idle) {
  {
    std::lock_guard lock(owner_->mutex_);
    idle_since_ = idle ? steady_ns() : 0;
  }
  if (idle) owner_->place_changed_.notify_all();  // waiting connections may close it later
}

void ConnectionTicket::forget_socket() {
  {
    std::lock_guard lock(owner_->mutex_);
    fd_ = -1;
  }
  owner_->place_changed_.notify_all();  // it no longer holds a place
}

bool ConnectionTicket::note_refusal_now() {
  return owner_->note_refusal_now();
}

bool ConnectionTicket::wait_for_place(std::chrono::steady_clock::time_point deadline,
                                      std::string* why_refused) {
  ConnectionLimiter& limiter = *owner_;
  std::unique_lock lock(limiter.mutex_);
  while (waiting_) {
    std::string why;
    if (limiter.take_place_locked(uid_, &why)) {
      waiting_ = false;
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      ++limiter.refused_;
      if (why_refused) *why_refused = why + "; no place within the request deadline";
      return false;
    }
    limiter.place_changed_.wait_until(lock, std::min(deadline, limiter.next_evictable_locked()));
  }
  return true;
}

bool ConnectionTicket::reserve(int64_t bytes, std::chrono::steady_clock::time_point deadline) {
  ConnectionLimiter& limiter = *owner_;
  std::unique_lock lock(limiter.mutex_);
  const int64_t total = limiter.limits_.max_buffered_bytes;
  const int64_t share = std::max<int64_t>(total / 2, 1);  // no uid takes it all
  auto fits = [&] {
    int64_t mine = limiter.buffered_per_uid_[uid_];
    // A frame larger than the budget still passes when nothing else is buffered, so a
    // configuration with max_frame_bytes above the budget cannot wedge a client for ever.
    return (limiter.buffered_ + bytes <= total || limiter.buffered_ == 0) &&
           (mine + bytes <= share || mine == 0);
  };
  if (!limiter.budget_freed_.wait_until(lock, deadline, fits)) return false;
  limiter.buffered_ += bytes;
  limiter.buffered_per_uid_[uid_] += bytes;
  reserved_ += bytes;
  return true;
}

void ConnectionTicket::release() {
  std::lock_guard lock(owner_->mutex_);
  if (reserved_ == 0) return;
  owner_->buffered_ -= reserved_;
  owner_->buffered_per_uid_[uid_] -= reserved_;
  reserved_ = 0;
  owner_->budget_freed_.notify_all();
}

std::shared_ptr<ConnectionLimiter> ConnectionLimiter::create(ConnectionLimits limits) {
  return std::shared_ptr<ConnectionLimiter>(new ConnectionLimiter(limits));
}

bool ConnectionLimiter::evict_idle_locked(uid_t uid) {
  const int64_t idle_before =
      steady_ns() -
      static_cast<int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.min_idle_to_evict).count());
  ConnectionTicket* oldest = nullptr;
  for (ConnectionTicket* t : live_) {
    if (t->uid_ != uid || t->idle_since_ == 0 || t->fd_ < 0 || t->waiting_) continue;
    if (t->idle_since_ > idle_before) continue;  // idle for a moment only: between two calls
    if (!oldest || t->idle_since_ < oldest->idle_since_) oldest = t;
  }
  if (!oldest) return false;
  // Its thread, blocked waiting for the next request, reads end-of-file and ends the
  // connection; the ticket is given back then. Until then it is not idle (not chosen twice).
  ::shutdown(oldest->fd_, SHUT_RDWR);
  oldest->idle_since_ = 0;
  oldest->fd_ = -1;
  ++evicted_;
  return true;
}

std::chrono::steady_clock::time_point ConnectionLimiter::next_evictable_locked() const {
  int64_t earliest = 0;
  for (const ConnectionTicket* t : live_)
    if (t->idle_since_ != 0 && t->fd_ >= 0 && !t->waiting_ &&
        (earliest == 0 || t->idle_since_ < earliest))
      earliest = t->idle_since_;
  if (earliest == 0) return std::chrono::steady_clock::time_point::max();
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(earliest)) +
         limits_.min_idle_to_evict;
}

bool ConnectionLimiter::take_place_locked(uid_t uid, std::string* why_not) {
  // Connections already evicted still count until their threads end, and waiting ones have no
  // place yet: count only those holding one, or a burst could be refused while its places are
  // being freed.
  auto active_of = [&](std::optional<uid_t> who) {
    int n = 0;
    for (ConnectionTicket* t : live_)
      if (t->fd_ >= 0 && !t->waiting_ && (!who || t->uid_ == *who)) ++n;
    return n;
  };
  if (active_of(uid) >= limits_.max_connections_per_uid && !evict_idle_locked(uid)) {
    *why_not = "uid " + std::to_string(uid) + " has " +
               std::to_string(limits_.max_connections_per_uid) +
               " connections busy (max_connections_per_uid)";
    return false;
  }
  if (active_of(std::nullopt) >= limits_.max_connections) {
    // The uid holding the most connections gives one up, if it has one idle long enough.
    std::map<uid_t, int> held;
    for (ConnectionTicket* t : live_)
      if (t->fd_ >= 0 && !t->waiting_) ++held[t->uid_];
    std::vector<std::pair<int, uid_t>> by_count;
    for (auto [who, n] : held) by_count.emplace_back(n, who);
    std::sort(by_count.rbegin(), by_count.rend());
    bool made_room = false;
    for (auto [n, who] : by_count)
      if ((made_room = evict_idle_locked(who))) break;
    if (!made_room) {
      *why_not = std::to_string(limits_.max_connections) + " connections busy (max_connections)";
      return false;
    }
  }
  return true;
}

std::shared_ptr<ConnectionTicket> ConnectionLimiter::admit_locked(uid_t uid, int fd, bool may_wait,
                                                                  std::string* why_refused) {
  auto refuse = [&](const std::string& why) -> std::shared_ptr<ConnectionTicket> {
    ++refused_;
    if (why_refused) *why_refused = why;
    return nullptr;
  };
  // Places held by evicted connections whose threads have not ended yet, and by waiting ones,
  // are bounded too: at most as many again as the limit, so that descriptors never run out.
  if (static_cast<int>(live_.size()) >= 2 * limits_.max_connections)
    return refuse("closing and waiting connections have not ended yet");
  std::string why;
  const bool placed = take_place_locked(uid, &why);
  if (!placed && !may_wait) return refuse(why);
  auto ticket =
      std::shared_ptr<ConnectionTicket>(new ConnectionTicket(shared_from_this(), uid, fd));
  ticket->waiting_ = !placed;
  live_.push_back(ticket.get());
  ++per_uid_[uid];
  return ticket;
}

std::shared_ptr<ConnectionTicket> ConnectionLimiter::admit(uid_t uid, int fd,
                                                           std::string* why_refused) {
  std::lock_guard lock(mutex_);
  return admit_locked(uid, fd, /*may_wait=*/false, why_refused);
}

std::shared_ptr<ConnectionTicket> ConnectionLimiter::admit_or_queue(uid_t uid, int fd,
                                                                    std::string* why_refused) {
  std::lock_guard lock(mutex_);
  return admit_locked(uid, fd, /*may_wait=*/true, why_refused);
}

void ConnectionLimiter::forget(ConnectionTicket* ticket) {
  std::lock_guard lock(mutex_);
  live_.erase(std::remove(live_.begin(), live_.end(), ticket), live_.end());
  if (--per_uid_[ticket->uid_] == 0) per_uid_.erase(ticket->uid_);
  if (ticket->reserved_ > 0) {
    buffered_ -= ticket->reserved_;
    buffered_per_uid_[ticket->uid_] -= ticket->reserved_;
    budget_freed_.notify_all();
  }
  place_changed_.notify_all();
}

ConnectionLimiter::Counts ConnectionLimiter::counts() const {
  std::lock_guard lock(mutex_);
  return {static_cast<int>(live_.size()), buffered_, evicted_, refused_};
}

bool ConnectionLimiter::note_refusal_now() {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (last_refusal_note_ != std::chrono::steady_clock::time_point{} &&
      now - last_refusal_note_ < std::chrono::minutes(1))
    return false;
  last_refusal_note_ = now;
  return true;
}

int ConnectionLimiter::connections_of(uid_t uid) const {
  std::lock_guard lock(mutex_);
  auto it = per_uid_.find(uid);
  return it == per_uid_.end() ? 0 : it->second;
}

}  // namespace fleetscope::daemon
