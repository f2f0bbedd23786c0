#include "fleetscope/agent/control_command.h"

#include <charconv>
#include <vector>

namespace fleetscope::agent {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool read_count(std::string_view text, int64_t& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= 0;
}

}  // namespace

ControlCommand parse_control_command(std::string_view line) {
  std::vector<std::string_view> w = words(line);
  if (w.empty()) return BadCommand{"empty command (expected open, close or status)"};
  if (w[0] == "close" && w.size() == 1) return CloseCommand{};
  if (w[0] == "status" && w.size() == 1) return StatusCommand{};
  if (w[0] != "open")
    return BadCommand{"unknown command '" + std::string(w[0]) +
                      "' (expected open, close or status)"};
  OpenCommand open;
  for (size_t i = 1; i < w.size(); ++i) {
    std::string_view word = w[i];
    if (word == "at-next-step") {
      open.request.start_at_next_step = true;
      continue;
    }
    size_t eq = word.find('=');
    std::string_view key = word.substr(0, eq);
    int64_t* target = key == "delay-ms"      ? &open.request.delay_ms
                      : key == "duration-ms" ? &open.request.duration_ms
                      : key == "iterations"  ? &open.request.iterations
                                             : nullptr;
    if (!target || eq == std::string_view::npos)
      return BadCommand{"unknown option '" + std::string(word) +
                        "' (expected delay-ms=N, duration-ms=N, iterations=N or at-next-step)"};
    if (!read_count(word.substr(eq + 1), *target))
      return BadCommand{"'" + std::string(word) + "': expected a non-negative integer"};
  }
  if (open.request.iterations > 0) open.request.start_at_next_step = true;
  return open;
}

std::string format_reply(const WindowReply& reply) {
  return (reply.accepted ? "ok: " : "refused: ") + reply.reason;
}

}  // namespace fleetscope::agent
