// The framing and size limits of every fleetscope Thrift connection (CLI <-> daemon and agent <->
// daemon), applied on both ends (the agent's own codec, collector/agent_link/wire.h, applies the
// frame limit on its side): Thrift's framed transport refuses a frame above max_frame_bytes
// before allocating it (TConfiguration, Thrift >= 0.14); its binary protocol checks containers
// against the message size but allocates a string of whatever length the peer claims (0.17's
// readStringBody resizes first), so the protocol also gets explicit string and container limits,
// and reads strict (versioned) messages only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace apache::thrift {
class TConfiguration;
}
namespace apache::thrift::transport {
class TTransport;
}
namespace apache::thrift::protocol {
class TProtocol;
class TProtocolFactory;
}  // namespace apache::thrift::protocol

namespace fleetscope::rpc {

struct TransportLimits {
  // 16 MiB: a record batch of max_batch_rows kernels with long names fits with room to spare;
  // Thrift's own defaults (100 MiB message, 16 MiB frame) are looser than a host daemon needs.
  int32_t max_frame_bytes = 16 * 1024 * 1024;
  int32_t max_message_bytes = 16 * 1024 * 1024;
  int32_t recursion_limit = 64;
  // Elements per list, set or map. Thrift resizes a container to the count the peer claims before
  // reading its elements, so the memory one message can make the reader allocate is this times
  // the size of an element (a RecordBatch KernelRecord is about 200 bytes: at the message-size
  // default of 16 Mi elements, 1.6 KB on the wire asked the daemon for 3.4 GB, found by the
  // thrift_frames fuzz target). Servers lower it to the largest list a request may carry
  // (daemon/thrift_server.h); clients keep the default for large answers.
  int32_t max_container_elements = 16 * 1024 * 1024;
};

std::shared_ptr<apache::thrift::TConfiguration> make_configuration(const TransportLimits& limits);

// A framed transport over a Unix-socket (path starting with '/') or a "host:port" TCP socket, with
// the limits above. Not opened yet. timeout_ms bounds connect/send/receive (0 = none).
std::shared_ptr<apache::thrift::transport::TTransport> make_client_transport(
    const std::string& address, const TransportLimits& limits, int timeout_ms);

// Client files (PEM) for a daemon whose TCP listener uses TLS (docs/daemon.md, "TLS"): this
// client's certificate and key (their CN is the user the daemon maps it to), and the CA that
// signed the daemon's certificate, which must name the HOST of the address (subjectAltName IP or
// DNS, or CN). Any of them set means TLS.
struct TlsClientFiles {
  std::string cert, key, ca;
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// The same over TLS when `tls` is enabled (HOST:PORT addresses only; throws
// std::invalid_argument for a socket path, Thrift's TSSLException for a file it cannot load).
std::shared_ptr<apache::thrift::transport::TTransport> make_client_transport(
    const std::string& address, const TransportLimits& limits, int timeout_ms,
    const TlsClientFiles& tls);

// TBinaryProtocol over `transport` with the limits (client side).
std::shared_ptr<apache::thrift::protocol::TProtocol> make_protocol(
    std::shared_ptr<apache::thrift::transport::TTransport> transport,
    const TransportLimits& limits);
// The same for servers.
std::shared_ptr<apache::thrift::protocol::TProtocolFactory> make_protocol_factory(
    const TransportLimits& limits);

}  // namespace fleetscope::rpc
