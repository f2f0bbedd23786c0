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

#include "fleetscope/daemon/connection_guard.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/peer.h"
#include "fleetscope/rpc/transport.h"

namespace apache::thrift {
class TProcessor;
}

namespace fleetscope::daemon {

// The limits the servers read requests with: the configured frame and message sizes, and lists of
// at most kMaxBatchRows elements (no request carries a longer one: a record batch has at most
// that many rows in all), so one message cannot make the daemon allocate more than a few MB.
rpc::TransportLimits server_transport_limits(const DaemonConfig& config);
// The connection limits of the configuration, lowered to what RLIMIT_NOFILE allows.
ConnectionLimits connection_limits(const DaemonConfig& config);

// The processor one connection of `caller` gets (the generated dispatch over the adapter over
// RpcHandler / AgentLinkHandler), exactly as the servers below build it; the Thrift fuzz target
// drives it over an in-memory transport.
std::shared_ptr<apache::thrift::TProcessor> make_host_processor(DaemonCore& core, Caller caller);
std::shared_ptr<apache::thrift::TProcessor> make_agent_link_processor(DaemonCore& core,
                                                                      Caller caller);

class ThriftServers {
 public:
  ThriftServers(DaemonCore& core, const DaemonConfig& config);
  ~ThriftServers();  // stop()
  ThriftServers(const ThriftServers&) = delete;
  ThriftServers& operator=(const ThriftServers&) = delete;

  // Listens on every configured endpoint; returns once they accept connections. Throws
  // std::runtime_error naming the socket when one cannot be served (e.g. another daemon on it).
  void start();
  // Stops accepting and ends every connection waiting for a request; returns at once (SIGTERM
  // calls it first: no client can hold the shutdown).
  void interrupt();
  // interrupt(), then waits for the calls in progress to return.
  void stop();
  const ConnectionLimiter& limiter() const { return *limiter_; }

 private:
  struct Served;

  DaemonCore& core_;
  DaemonConfig config_;
  rpc::TransportLimits limits_;
  std::shared_ptr<ConnectionLimiter> limiter_;
  std::vector<std::shared_ptr<Served>> served_;
};

}  // namespace fleetscope::daemon
