// Who is on the other end of a socket. On a Unix socket the kernel tells us (SO_PEERCRED, unix(7));
// on a loopback TCP connection the owner of the peer's socket is found in /proc/net/tcp (the
// identd approach), so the same per-user rules apply to both.
#pragma once

#include <sys/types.h>
#include <optional>
#include <string>

namespace fleetscope::daemon {

struct Caller {
  pid_t pid = 0;  // 0 when unknown (TCP)
  uid_t uid = 0;
  bool is_root() const { return uid == 0; }
  // A non-root caller may only see and trace processes of its own uid; root may do all.
  bool may_access(uid_t owner) const { return is_root() || owner == uid; }
};

std::optional<Caller> peer_of_unix_socket(int fd);
// For a TCP connection accepted on 127.0.0.1: the uid owning the peer's end, from the "tcp" table
// under proc_root/net. nullopt when it cannot be established (then the caller is refused).
std::optional<Caller> peer_of_loopback_tcp(int fd, const std::string& proc_root = "/proc");

}  // namespace fleetscope::daemon
