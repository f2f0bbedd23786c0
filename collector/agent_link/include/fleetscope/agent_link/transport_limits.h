// The framing and size limits of every fleetscope Thrift connection (CLI <-> daemon and agent <->
// daemon), applied on both ends: Thrift's framed transport refuses a frame above max_frame_bytes
// before allocating it, and its binary protocol refuses strings/containers that claim more bytes
// than max_message_bytes (TConfiguration, Thrift >= 0.14).
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

namespace fleetscope::agent_link {

struct TransportLimits {
  // 16 MiB: a record batch of max_batch_rows kernels with long names fits with room to spare;
  // Thrift's own defaults (100 MiB message, 16 MiB frame) are looser than a host daemon needs.
  int32_t max_frame_bytes = 16 * 1024 * 1024;
  int32_t max_message_bytes = 16 * 1024 * 1024;
  int32_t recursion_limit = 64;
};

std::shared_ptr<apache::thrift::TConfiguration> make_configuration(const TransportLimits& limits);

// A framed transport over a Unix-socket (path starting with '/') or a "host:port" TCP socket, with
// the limits above. Not opened yet. timeout_ms bounds connect/send/receive (0 = none).
std::shared_ptr<apache::thrift::transport::TTransport> make_client_transport(
    const std::string& address, const TransportLimits& limits, int timeout_ms);

}  // namespace fleetscope::agent_link
