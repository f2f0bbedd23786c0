#include "fleetscope/rpc/transport.h"

#include <thrift/TConfiguration.h>
#include <thrift/TOutput.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSSLSocket.h>
#include <thrift/transport/TSocket.h>

#include <mutex>
#include <stdexcept>

namespace fleetscope::rpc {

using apache::thrift::TConfiguration;
using apache::thrift::transport::DefaultClientAccessManager;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TSSLSocketFactory;
using apache::thrift::transport::TTransport;

std::shared_ptr<TConfiguration> make_configuration(const TransportLimits& limits) {
  return std::make_shared<TConfiguration>(limits.max_message_bytes, limits.max_frame_bytes,
                                          limits.recursion_limit);
}

namespace {

std::pair<std::string, int> host_and_port(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    throw std::invalid_argument("daemon address '" + address +
                                "': expected a socket path (/...) or HOST:PORT");
  // A port of digits only, 1 to 65535: std::stoi said "stoi" for '127.0.0.1:abc', took
  // '127.0.0.1:80x' as port 80 and cut '127.0.0.1:99999999999' short of an error.
  const std::string port = address.substr(colon + 1);
  int number = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || number > 65535) {
      number = 0;
      break;
    }
    number = number * 10 + (c - '0');
  }
  if (number < 1 || number > 65535)
    throw std::invalid_argument("daemon address '" + address + "': the port '" + port +
                                "' is not a number from 1 to 65535 (expected HOST:PORT)");
  return {address.substr(0, colon), number};
}

void set_timeouts(TSocket& socket, int timeout_ms) {
  if (timeout_ms <= 0) return;
  socket.setConnTimeout(timeout_ms);
  socket.setRecvTimeout(timeout_ms);
  socket.setSendTimeout(timeout_ms);
}

// Thrift wants a TSSLSocketFactory to outlive its sockets (it cleans OpenSSL up when the last
// factory goes): the framed transport keeps it, and as a base listed first it is destroyed after
// the transport's socket.
struct FactoryHolder {
  std::shared_ptr<TSSLSocketFactory> factory;
};
class TlsFramedTransport : private FactoryHolder, public TFramedTransport {
 public:
  TlsFramedTransport(std::shared_ptr<TSSLSocketFactory> factory, std::shared_ptr<TTransport> socket,
                     std::shared_ptr<TConfiguration> config)
      : FactoryHolder{std::move(factory)}, TFramedTransport(std::move(socket), std::move(config)) {}
};

}  // namespace

namespace {

// Thrift logs a failed connect on stderr itself (GlobalOutput) before throwing the exception that
// says the same; a client reports the exception in its own one-line error, so Thrift's line is
// dropped (servers keep Thrift's logging).
void quiet_thrift_client_logging() {
  static std::once_flag once;
  std::call_once(once, [] { apache::thrift::GlobalOutput.setOutputFunction([](const char*) {}); });
}

}  // namespace

std::shared_ptr<TTransport> make_client_transport(const std::string& address,
                                                  const TransportLimits& limits, int timeout_ms) {
  quiet_thrift_client_logging();
  auto config = make_configuration(limits);
  std::shared_ptr<TSocket> socket;
  if (!address.empty() && address[0] == '/') {
    socket = std::make_shared<TSocket>(address, config);
  } else {
    auto [host, port] = host_and_port(address);
    socket = std::make_shared<TSocket>(host, port, config);
  }
  set_timeouts(*socket, timeout_ms);
  return std::make_shared<TFramedTransport>(socket, config);
}

std::shared_ptr<TTransport> make_client_transport(const std::string& address,
                                                  const TransportLimits& limits, int timeout_ms,
                                                  const TlsClientFiles& tls) {
  if (!tls.enabled()) return make_client_transport(address, limits, timeout_ms);
  quiet_thrift_client_logging();
  if (!address.empty() && address[0] == '/')
    throw std::invalid_argument("daemon address '" + address +
                                "': TLS applies to HOST:PORT addresses, not socket paths");
  auto [host, port] = host_and_port(address);
  auto factory = std::make_shared<TSSLSocketFactory>(apache::thrift::transport::SSLTLS);
  if (!tls.cert.empty()) factory->loadCertificate(tls.cert.c_str());
  if (!tls.key.empty()) factory->loadPrivateKey(tls.key.c_str());
  if (!tls.ca.empty()) factory->loadTrustedCertificates(tls.ca.c_str());
  // The daemon's certificate must chain to tls.ca and name `host` (Thrift's default client check).
  factory->authenticate(true);
  factory->access(std::make_shared<DefaultClientAccessManager>());
  auto socket = factory->createSocket(host, port);
  set_timeouts(*socket, timeout_ms);
  auto config = make_configuration(limits);
  return std::make_shared<TlsFramedTransport>(factory, socket, config);
}

std::shared_ptr<apache::thrift::protocol::TProtocol> make_protocol(
    std::shared_ptr<TTransport> transport, const TransportLimits& limits) {
  return std::make_shared<apache::thrift::protocol::TBinaryProtocol>(
      transport, limits.max_message_bytes, limits.max_container_elements, /*strict_read=*/true,
      /*strict_write=*/true);
}

std::shared_ptr<apache::thrift::protocol::TProtocolFactory> make_protocol_factory(
    const TransportLimits& limits) {
  return std::make_shared<apache::thrift::protocol::TBinaryProtocolFactory>(
      limits.max_message_bytes, limits.max_container_elements, /*strict_read=*/true,
      /*strict_write=*/true);
}

}  // namespace fleetscope::rpc
