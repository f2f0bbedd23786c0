#include "fleetscope/daemon/peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

namespace fleetscope::daemon {

std::optional<Caller> peer_of_unix_socket(int fd) {
  struct ucred credentials {};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return std::nullopt;
  return Caller{credentials.pid, credentials.uid};
}

std::optional<Caller> peer_of_loopback_tcp(int fd, const std::string& proc_root) {
  sockaddr_in local{}, remote{};
  socklen_t length = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
      local.sin_family != AF_INET)
    return std::nullopt;
  length = sizeof remote;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length) != 0) return std::nullopt;
  if (ntohl(remote.sin_addr.s_addr) >> 24 != 127) return std::nullopt;  // loopback only
  // The peer's socket is the row whose local address is our remote one and vice versa. Addresses
  // are printed as hex of the network-order word, ports as hex in host order (proc(5)).
  auto key = [](const sockaddr_in& a) {
    char text[32];
    std::snprintf(text, sizeof text, "%08X:%04X", a.sin_addr.s_addr, ntohs(a.sin_port));
    return std::string(text);
  };
  const std::string peer_local = key(remote), peer_remote = key(local);
  std::ifstream table(proc_root + "/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local_address, remote_address, state, queues, timer, retransmits;
    long uid = -1;
    if (!(fields >> slot >> local_address >> remote_address >> state >> queues >> timer >>
          retransmits >> uid))
      continue;
    if (local_address == peer_local && remote_address == peer_remote)
      return Caller{0, static_cast<uid_t>(uid)};
  }
  return std::nullopt;
}

}  // namespace fleetscope::daemon
