#include "fleetscope/rpc/transport.h"

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <stdexcept>

namespace fleetscope::rpc {

using apache::thrift::TConfiguration;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransport;

std::shared_ptr<TConfiguration> make_configuration(const TransportLimits& limits) {
  return std::make_shared<TConfiguration>(limits.max_message_bytes, limits.max_frame_bytes,
                                          limits.recursion_limit);
}

std::shared_ptr<TTransport> make_client_transport(const std::string& address,
                                                  const TransportLimits& limits, int timeout_ms) {
  auto config = make_configuration(limits);
  std::shared_ptr<TSocket> socket;
  if (!address.empty() && address[0] == '/') {
    socket = std::make_shared<TSocket>(address, config);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
      throw std::invalid_argument("daemon address '" + address +
                                  "': expected a socket path (/...) or HOST:PORT");
    socket = std::make_shared<TSocket>(address.substr(0, colon),
                                       std::stoi(address.substr(colon + 1)), config);
  }
  if (timeout_ms > 0) {
    socket->setConnTimeout(timeout_ms);
    socket->setRecvTimeout(timeout_ms);
    socket->setSendTimeout(timeout_ms);
  }
  return std::make_shared<TFramedTransport>(socket, config);
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
