// What one local user can make the daemon hold: connections (all listeners together and per uid),
// bytes of requests being read (a frame's declared size is reserved before its body is read), and
// time (a request must arrive whole within a deadline from its first byte, however slowly it
// drips). A new connection over a limit first takes the place of the longest-idle connection of
// the same uid (or, at the global limit, of the uid holding the most); when none is idle it is
// refused: closed at once, the listener goes on. See docs/daemon.md, "Limits".
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
  std::chrono::milliseconds request_deadline{10'000};  // first byte of a frame to its last
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
  // Waiting for the next request (may be closed to admit another) or reading/serving one.
  void set_idle(bool idle);
  // The socket is about to be closed by its owner: the limiter must no longer shut it down.
  void forget_socket();
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
  int64_t reserved_ = 0;    // guarded by the limiter's mutex
};

class ConnectionLimiter : public std::enable_shared_from_this<ConnectionLimiter> {
 public:
  static std::shared_ptr<ConnectionLimiter> create(ConnectionLimits limits);

  const ConnectionLimits& limits() const { return limits_; }

  // Admits a connection of `uid` on socket `fd`, closing (shutdown(2)) an idle connection to
  // make room when a limit is reached; nullptr when none could be closed: refuse it.
  // `why_refused` then says which limit.
  std::shared_ptr<ConnectionTicket> admit(uid_t uid, int fd, std::string* why_refused = nullptr);

  struct Counts {
    int connections = 0;
    int64_t buffered_bytes = 0;
    int64_t evicted = 0, refused = 0;
  };
  Counts counts() const;
  int connections_of(uid_t uid) const;

 private:
  friend class ConnectionTicket;
  explicit ConnectionLimiter(ConnectionLimits limits) : limits_(limits) {}
  // With the mutex held: closes the longest-idle connection of `uid`; false when none is idle.
  bool evict_idle_locked(uid_t uid);
  void forget(ConnectionTicket* ticket);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  std::condition_variable budget_freed_;
  std::vector<ConnectionTicket*> live_;
  std::map<uid_t, int> per_uid_;
  std::map<uid_t, int64_t> buffered_per_uid_;
  int64_t buffered_ = 0;
  int64_t evicted_ = 0, refused_ = 0;
};

}  // namespace fleetscope::daemon
