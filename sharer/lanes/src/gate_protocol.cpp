#include "fleetscope/lanes/gate_protocol.h"

#include <charconv>
#include <vector>

#include "fleetscope/lanes/lane_segment.h"

namespace fleetscope::lanes {
namespace {

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return fields;
}

template <typename Integer>
bool parse_number(std::string_view text, Integer* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string format_hello(const GateHello& hello) {
  return "HELLO " + std::to_string(kGateProtocolVersion) + " " + hello.lane_id + " " +
         std::to_string(hello.pid) + " " + std::to_string(hello.priority) + "\n";
}

std::string format_next(uint64_t remaining_ns) {
  return "NEXT " + std::to_string(remaining_ns) + "\n";
}

std::string format_release() {
  return "RELEASE\n";
}

std::optional<GateHello> parse_hello(std::string_view line, std::string* error) {
  auto fields = split_spaces(line);
  if (fields.size() != 5 || fields[0] != "HELLO") {
    *error = "expected 'HELLO <version> <lane> <pid> <priority>', got '" + std::string(line) + "'";
    return std::nullopt;
  }
  int version = 0;
  if (!parse_number(fields[1], &version) || version != kGateProtocolVersion) {
    *error = "unsupported protocol version '" + std::string(fields[1]) + "' (this arbiter speaks " +
             std::to_string(kGateProtocolVersion) + ")";
    return std::nullopt;
  }
  GateHello hello;
  hello.lane_id = std::string(fields[2]);
  if (!LaneSegment::valid_lane_id(hello.lane_id)) {
    *error = "invalid lane id '" + hello.lane_id + "'";
    return std::nullopt;
  }
  if (!parse_number(fields[3], &hello.pid) || hello.pid <= 0) {
    *error = "invalid pid '" + std::string(fields[3]) + "'";
    return std::nullopt;
  }
  if (!parse_number(fields[4], &hello.priority)) {
    *error = "invalid priority '" + std::string(fields[4]) + "'";
    return std::nullopt;
  }
  return hello;
}

std::optional<GateRequest> parse_request(std::string_view line, std::string* error) {
  auto fields = split_spaces(line);
  GateRequest request;
  if (fields.size() == 2 && fields[0] == "NEXT" && parse_number(fields[1], &request.remaining_ns)) {
    request.kind = GateRequestKind::kNext;
    return request;
  }
  if (fields.size() == 1 && fields[0] == "RELEASE") {
    request.kind = GateRequestKind::kRelease;
    return request;
  }
  *error = "expected 'NEXT <remaining-ns>' or 'RELEASE', got '" + std::string(line) + "'";
  return std::nullopt;
}

}  // namespace fleetscope::lanes
