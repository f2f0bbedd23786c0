// TLS on the API's TCP listener, only when configured (tls_cert, tls_key, tls_ca). The server is
// Apache Thrift's TSSLServerSocket with a TSSLSocketFactory that requires a client certificate and
// verifies it against tls_ca (authenticate(true)); the verified certificate's subject common name
// (CN) is then mapped to a uid (tls_client_uids = "name:uid, ..."; tls_default_uid for names not
// listed, -1 = refuse them), and the per-user rules apply to that uid exactly as to a local
// caller: a non-root uid sees and traces only its own processes. Mapping a name to uid 0 makes
// that certificate root.
// Without TLS the TCP listener is plain and must be on a loopback address: there the caller's uid
// comes from /proc/net/tcp (peer.h); anywhere else nothing could identify the caller.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fleetscope/daemon/config.h"

namespace apache::thrift {
class TConfiguration;
}
namespace apache::thrift::transport {
class TSSLSocketFactory;
class TTransport;
}  // namespace apache::thrift::transport

namespace fleetscope::daemon {

struct TlsIdentityMap {
  std::map<std::string, uid_t> uid_by_name;  // certificate CN -> uid
  std::optional<uid_t> default_uid;          // for a CN not listed; none = refused
  std::optional<uid_t> uid_of(const std::string& common_name) const;
};

// Parses tls_client_uids ("alice:1000, ops-team:0"; empty = no names) and tls_default_uid (-1 =
// none). Throws std::invalid_argument saying what was expected.
TlsIdentityMap parse_tls_identities(const std::string& client_uids, int64_t default_uid);

bool is_loopback_address(const std::string& ipv4_address);
bool tls_configured(const DaemonConfig& config);

// The listener settings checked together, before anything listens: the three TLS files all or
// none (and readable), tls_client_uids well formed, tcp_address an IPv4 address, and a
// non-loopback tcp_address only with TLS. Throws std::runtime_error naming the key.
void check_listener_config(const DaemonConfig& config);

// The socket factory of the API's TLS server socket (a TSSLServerSocket on tcp_address:tcp_port
// made with it; the accepted sockets carry `limits`). Throws
// apache::thrift::transport::TSSLException (or TTransportException) when a file cannot be loaded.
std::shared_ptr<apache::thrift::transport::TSSLSocketFactory> make_tls_socket_factory(
    const DaemonConfig& config, std::shared_ptr<apache::thrift::TConfiguration> limits);

// The uid the client certificate of a connection accepted with that factory maps to, once
// its handshake is done (the first read of the connection does it); nullopt before that or for
// another kind of transport.
std::optional<uid_t> tls_peer_uid(const std::shared_ptr<apache::thrift::transport::TTransport>& t);

}  // namespace fleetscope::daemon
