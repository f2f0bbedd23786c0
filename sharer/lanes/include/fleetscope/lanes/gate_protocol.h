#pragma once
// The iteration gate's wire protocol between a job (the interposition library) and the arbiter,
// over a Unix stream socket. Text lines, '\n'-terminated, one message per line, fields separated
// by single spaces; lines longer than kMaxLine are a protocol error (the connection is closed).
//
//   job -> arbiter
//     HELLO 1 <lane-id> <pid> <priority>   first line; 1 is the protocol version. The arbiter
//                                          checks <pid> against the socket's SO_PEERCRED.
//     NEXT <remaining-ns>                  at an iteration boundary: give the turn back if held
//                                          and queue for the next one (remaining 0: unknown).
//     RELEASE                              give the turn back without queueing (the job leaves
//                                          the rotation until its next NEXT).
//   arbiter -> job
//     WELCOME                              answer to HELLO
//     REFUSED <reason...>                  answer to a bad HELLO; the arbiter then closes
//     GO                                   the job holds the turn now (answer to a NEXT, maybe
//                                          much later)
//
// Closing the connection (the job exited or was killed) releases its turn and its place in the
// queue. A job whose connection breaks, or that cannot connect, runs with its gate open.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fleetscope::lanes {

inline constexpr int kGateProtocolVersion = 1;
inline constexpr size_t kMaxGateLine = 256;

struct GateHello {
  std::string lane_id;
  pid_t pid = 0;
  int priority = 0;
};

enum class GateRequestKind { kNext, kRelease };

struct GateRequest {
  GateRequestKind kind = GateRequestKind::kNext;
  uint64_t remaining_ns = 0;
};

std::string format_hello(const GateHello& hello);
std::string format_next(uint64_t remaining_ns);
std::string format_release();

// Parses one line without its '\n'; nullopt and `error` on anything malformed.
std::optional<GateHello> parse_hello(std::string_view line, std::string* error);
std::optional<GateRequest> parse_request(std::string_view line, std::string* error);

}  // namespace fleetscope::lanes
