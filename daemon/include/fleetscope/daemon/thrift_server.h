// The thin Thrift adapter: serves RpcHandler (service FleetscopeHost) on the API socket and
// AgentLinkHandler (service FleetscopeAgentLink) on the agent socket, each with a threaded server
// over the framed transport with the configured frame and message limits. A Unix socket is made
// world-connectable (0666) on purpose: who may do what is decided per call from SO_PEERCRED.
// The API can also listen on TCP: plain on a loopback address, where callers are identified through
// /proc/net/tcp, or with TLS and client certificates (tls_listener.h), where the certificate's CN
// maps to the caller's uid. Any caller the daemon cannot identify gets no other user's data.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/rpc/transport.h"

namespace fleetscope::daemon {

class ThriftServers {
 public:
  ThriftServers(DaemonCore& core, const DaemonConfig& config);
  ~ThriftServers();  // stop()
  ThriftServers(const ThriftServers&) = delete;
  ThriftServers& operator=(const ThriftServers&) = delete;

  // Listens on every configured endpoint; returns once they accept connections. Throws
  // std::runtime_error naming the socket when one cannot be served (e.g. another daemon on it).
  void start();
  void stop();

 private:
  struct Served;

  DaemonCore& core_;
  DaemonConfig config_;
  rpc::TransportLimits limits_;
  std::vector<std::shared_ptr<Served>> served_;
};

}  // namespace fleetscope::daemon
