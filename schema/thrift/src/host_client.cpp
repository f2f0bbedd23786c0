#include "fleetscope/rpc/host_client.h"

#include <thrift/transport/TTransport.h>

#include "fleetscope/rpc/transport.h"

namespace fleetscope::rpc {

HostConnection::HostConnection(const std::string& address, int timeout_ms)
    : HostConnection(address, TlsClientFiles{}, timeout_ms) {}

HostConnection::HostConnection(const std::string& address, const TlsClientFiles& tls,
                               int timeout_ms)
    : address_(address) {
  transport_ = make_client_transport(address, TransportLimits{}, timeout_ms, tls);
  client_ = std::make_unique<FleetscopeHostClient>(make_protocol(transport_, {}));
  transport_->open();
}

HostConnection::~HostConnection() {
  try {
    transport_->close();
  } catch (...) {
    // Closing a connection the daemon already dropped: nothing left to release.
  }
}

}  // namespace fleetscope::rpc
