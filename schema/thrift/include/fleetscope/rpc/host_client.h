// A connection to the host daemon's API (FleetscopeHost) as its clients use it: the `fleetscope
// status/jobs/trace/metrics` commands and the GUI. Framed binary Thrift with the limits of
// transport.h, over a Unix socket ('/'-path) or "HOST:PORT" (plain, or TLS with client files).
// Opened by the constructor (throws apache::thrift::transport::TTransportException when the daemon
// cannot be reached); closed by the destructor.
#pragma once

#include <memory>
#include <string>

#include "FleetscopeHost.h"
#include "fleetscope/rpc/transport.h"

namespace fleetscope::rpc {

class HostConnection {
 public:
  // timeout_ms bounds connect, send and receive; the default leaves room for a `trace --wait`.
  explicit HostConnection(const std::string& address, int timeout_ms = 70'000);
  // Over TLS when `tls` is enabled (a daemon's TLS listener, HOST:PORT).
  HostConnection(const std::string& address, const TlsClientFiles& tls, int timeout_ms = 70'000);
  ~HostConnection();
  HostConnection(const HostConnection&) = delete;
  HostConnection& operator=(const HostConnection&) = delete;

  const std::string& address() const { return address_; }
  FleetscopeHostClient* operator->() { return client_.get(); }
  FleetscopeHostClient& client() { return *client_; }

 private:
  std::string address_;
  std::shared_ptr<apache::thrift::transport::TTransport> transport_;
  std::unique_ptr<FleetscopeHostClient> client_;
};

}  // namespace fleetscope::rpc
