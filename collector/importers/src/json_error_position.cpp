#include "json_error_position.h"

namespace fleetscope::importers {

namespace {

// Length of the valid UTF-8 sequence starting at text[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when it is not one.
size_t utf8_sequence_length(const unsigned char* text, size_t size, size_t i) {
  const unsigned char c = text[i];
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (size - i < n) return 0;
  if (text[i + 1] < lo || text[i + 1] > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (text[i + k] < 0x80 || text[i + k] > 0xbf) return 0;
  return n;
}

std::optional<size_t> first_invalid_utf8(const char* text, size_t size) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text);
  for (size_t i = 0; i < size;) {
    const size_t n = utf8_sequence_length(bytes, size, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

// One pass over the strings of the text: the first control character inside a string, and the
// opening quote of a string that the text ends inside.
struct StringScan {
  std::optional<size_t> control_char, unclosed_quote;
};

StringScan scan_strings(const char* text, size_t size) {
  StringScan scan;
  bool in_string = false;
  size_t opened = 0;
  for (size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!in_string) {
      if (c == '"') in_string = true, opened = i;
      continue;
    }
    if (c == '\\') {
      ++i;  // the escaped character, whatever it is, does not end the string
    } else if (c == '"') {
      in_string = false;
    } else if (c < 0x20 && !scan.control_char) {
      scan.control_char = i;
    }
  }
  if (in_string) scan.unclosed_quote = opened;
  return scan;
}

std::string control_char_text(unsigned char c) {
  static const char* hex = "0123456789abcdef";
  std::string code = "\\u00";
  code += hex[c >> 4];
  code += hex[c & 0xf];
  return code;
}

}  // namespace

std::optional<JsonErrorPosition> locate_json_error(const char* text, size_t size,
                                                   simdjson::error_code err) {
  switch (err) {
    case simdjson::UTF8_ERROR:
      if (auto at = first_invalid_utf8(text, size))
        return JsonErrorPosition{*at, "this byte is not valid UTF-8, expected UTF-8 text"};
      return std::nullopt;
    case simdjson::UNESCAPED_CHARS: {
      const StringScan scan = scan_strings(text, size);
      if (!scan.control_char) return std::nullopt;
      const auto c = static_cast<unsigned char>(text[*scan.control_char]);
      return JsonErrorPosition{*scan.control_char, "control character " + control_char_text(c) +
                                                       " inside a string, expected it escaped (" +
                                                       control_char_text(c) + ")"};
    }
    case simdjson::UNCLOSED_STRING: {
      const StringScan scan = scan_strings(text, size);
      if (!scan.unclosed_quote) return std::nullopt;
      return JsonErrorPosition{*scan.unclosed_quote,
                               "the string that starts here is never closed (the input ends "
                               "at byte " +
                                   std::to_string(size) + " inside it: a truncated file?)"};
    }
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return JsonErrorPosition{size,
                               "the input ends inside an object or array, expected more data "
                               "and its closing bracket (a truncated file?)"};
    default:
      return std::nullopt;
  }
}

}  // namespace fleetscope::importers
