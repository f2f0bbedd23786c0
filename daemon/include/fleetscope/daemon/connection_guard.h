// What one local user can make the daemon hold: connections (all listeners together and per uid),
// bytes of requests being read (a frame's declared size is reserved before its body is read), and
// time (a request must arrive whole within a deadline from its first byte, however slowly it
// drips). A new connection over a limit takes the place of the longest-idle connection of the same
// uid (or, at the global limit, of the uid holding the most) that has been idle for at least
// `min_idle_to_evict`; when none has, it waits for a place in its own thread (a connection ending,
// or one passing that idle time) until the request deadline, and is refused (closed) only then.
// A connection idle for a moment (a client between two calls, or one just accepted whose first
// request is on its way) is never closed for another: under a burst of one uid's clients that
// closed some of them mid-session. See docs/daemon.md, "Limits".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fleetscope::daemon {

struct ConnectionLimits {
  int max_connections = 1024;             // every listener together
  int max_connections_per_uid = 128;      // one uid on every listener together
  int64_t max_buffered_bytes = 64 << 20;  // frames being read, every connection together
  std::chrono::milliseconds request_deadline{10'000};  // first byte of a frame to its last;
                                                       // also the longest wait for a place
  std::chrono::milliseconds min_idle_to_evict{2'000};  // idle for less: never closed for another
};

// The limits in force: `wanted` with the connection counts lowered to what `open_files_limit`
// (RLIMIT_NOFILE) leaves after `reserved_files` descriptors for the database, samplers and logs,
// and the per-uid count to at most the global one.
ConnectionLimits effective_limits(ConnectionLimits wanted, int64_t open_files_limit,
                                  int64_t reserved_files = 64);

class ConnectionLimiter;

// One admitted connection; held by its transport for the connection's life (the destructor
// gives the place back).
class ConnectionTicket {
 public:
  ~ConnectionTicket();
  ConnectionTicket(const ConnectionTicket&) = delete;
  ConnectionTicket& operator=(const ConnectionTicket&) = delete;

  uid_t uid() const { return uid_; }
  // ConnectionLimiter::note_refusal_now of its limiter.
  bool note_refusal_now();
  // Waiting for the next request (may be closed to admit another) or reading/serving one.
  void set_idle(bool idle);
  // The socket is about to be closed by its owner: the limiter must no longer shut it down.
  void forget_socket();
  // For a connection admitted in waiting (ConnectionLimiter::admit_or_queue): waits until it has a
  // place or `deadline` passes (false: refuse it; `why_refused` says which limit). True at once
  // for a connection that has its place.
  bool wait_for_place(std::chrono::steady_clock::time_point deadline,
                      std::string* why_refused = nullptr);
  // Reserves `bytes` of the read budget, waiting at most until `deadline`; false when it did
  // not become free by then. One reservation at a time; release() gives it back.
  bool reserve(int64_t bytes, std::chrono::steady_clock::time_point deadline);
  void release();

 private:
  friend class ConnectionLimiter;
  ConnectionTicket(std::shared_ptr<ConnectionLimiter> owner, uid_t uid, int fd);

  std::shared_ptr<ConnectionLimiter> owner_;
  uid_t uid_;
  int fd_;                  // guarded by the limiter's mutex; -1 once forgotten
  int64_t idle_since_ = 0;  // steady ns; 0 = busy. Guarded by the limiter's mutex.
  bool waiting_ = false;    // admitted in waiting, no place yet. Guarded by the limiter's mutex.
  int64_t reserved_ = 0;    // guarded by the limiter's mutex
};

class ConnectionLimiter : public std::enable_shared_from_this<ConnectionLimiter> {
 public:
  static std::shared_ptr<ConnectionLimiter> create(ConnectionLimits limits);

  const ConnectionLimits& limits() const { return limits_; }

  // Admits a connection of `uid` on socket `fd`, closing (shutdown(2)) a connection idle for at
  // least min_idle_to_evict to make room when a limit is reached; nullptr when none could be
  // closed: refuse it. `why_refused` then says which limit.
  std::shared_ptr<ConnectionTicket> admit(uid_t uid, int fd, std::string* why_refused = nullptr);
  // The same, but over a limit the connection is admitted in waiting (its thread calls
  // ConnectionTicket::wait_for_place before reading a request) rather than refused; nullptr only
  // when the connections held, waiting ones included, are twice max_connections.
  std::shared_ptr<ConnectionTicket> admit_or_queue(uid_t uid, int fd,
                                                   std::string* why_refused = nullptr);

  struct Counts {
    int connections = 0;
    int64_t buffered_bytes = 0;
    int64_t evicted = 0, refused = 0;
  };
  Counts counts() const;
  int connections_of(uid_t uid) const;
  // Whether a refusal should be logged now: the first, then at most one a minute (a burst of
  // refusals is one line, not one per connection).
  bool note_refusal_now();

 private:
  friend class ConnectionTicket;
  explicit ConnectionLimiter(ConnectionLimits limits) : limits_(limits) {}
  // With the mutex held: closes the longest-idle connection of `uid` idle for at least
  // min_idle_to_evict; false when there is none.
  bool evict_idle_locked(uid_t uid);
  // With the mutex held: whether a connection of `uid` may have a place now (closing an idle one
  // if it must); else why not.
  bool take_place_locked(uid_t uid, std::string* why_not);
  // With the mutex held: when the next connection idle now becomes old enough to close (for a
  // waiting connection's wake-up); time_point::max() when none is idle.
  std::chrono::steady_clock::time_point next_evictable_locked() const;
  std::shared_ptr<ConnectionTicket> admit_locked(uid_t uid, int fd, bool may_wait,
                                                 std::string* why_refused);
  void forget(ConnectionTicket* ticket);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable budget_freed_;
  std::condition_variable place_changed_;  // a place freed, or a connection became idle
  std::vector<ConnectionTicket*> live_;
  std::map<uid_t, int> per_uid_;
  std::map<uid_t, int64_t> buffered_per_uid_;
  int64_t buffered_ = 0;
  int64_t evicted_ = 0, refused_ = 0;
  std::chrono::steady_clock::time_point last_refusal_note_{};
};

}  // namespace fleetscope::daemon
