// Text that came from somewhere the program does not control (an agent's hello, a file's rows):
// made valid UTF-8 and bounded where it enters (the daemon's boundary), and made harmless where it
// leaves for a terminal (no control character reaches it raw: an escape sequence in a workflow
// name must not drive root's terminal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace fleetscope::text {

// Length of the valid UTF-8 sequence at the start of `s` (1..4), or 0 when it is not one
// (overlong forms, surrogates and code points above U+10FFFF are not, RFC 3629 section 3).
inline size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t min = 0, code = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, min = 0x80, code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, min = 0x800, code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, min = 0x10000, code = lead & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3F);
  }
  if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

inline bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// `s` as valid UTF-8 (each byte that starts no valid sequence becomes U+FFFD) of at most
// `max_bytes`, cut at a character boundary; `*cut` says whether anything was left out.
inline std::string valid_utf8(std::string_view s, size_t max_bytes = std::string::npos,
                              bool* cut = nullptr) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string out;
  out.reserve(s.size() < max_bytes ? s.size() : max_bytes);
  if (cut) *cut = false;
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    std::string_view piece = n ? s.substr(0, n) : kReplacement;
    if (out.size() + piece.size() > max_bytes) {
      if (cut) *cut = true;
      break;
    }
    out += piece;
    s.remove_prefix(n ? n : 1);
  }
  return out;
}

// An agent-supplied string as the daemon keeps it: valid UTF-8, at most `max_bytes`, and when it
// was longer a note saying so (the note is not counted in `max_bytes`).
inline std::string bounded_field(std::string_view s, size_t max_bytes) {
  bool cut = false;
  std::string out = valid_utf8(s, max_bytes, &cut);
  if (cut) out += " [cut at " + std::to_string(max_bytes) + " bytes]";
  return out;
}

// `s` safe to print on a terminal: C0 controls, DEL and C1 controls (U+0080..U+009F, which some
// terminals take as CSI and the like) become \xHH or \u{HHHH}; bytes that are not UTF-8 become
// \xHH. Everything else, any script included, is kept.
inline std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char escaped[16];
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    const auto lead = static_cast<unsigned char>(s[0]);
    if (n == 0) {
      std::snprintf(escaped, sizeof escaped, "\\x%02X", lead);
      out += escaped;
      s.remove_prefix(1);
      continue;
    }
    if (n == 1 && (lead < 0x20 || lead == 0x7F)) {
      std::snprintf(escaped, sizeof escaped, "\\x%02X", lead);
      out += escaped;
    } else if (n == 2 && lead == 0xC2 && static_cast<unsigned char>(s[1]) < 0xA0) {
      std::snprintf(escaped, sizeof escaped, "\\u{%04X}", static_cast<unsigned char>(s[1]));
      out += escaped;
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
  return out;
}

// Several lines of output made safe the same way, their line feeds kept (a table or a report
// whose cells came from a file).
inline std::string terminal_safe_lines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    const size_t end = s.find('\n');
    out += terminal_safe(s.substr(0, end));
    if (end == std::string_view::npos) break;
    out += '\n';
    s.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace fleetscope::text
