// Where in a JSON text simdjson's structural pass failed. simdjson's stage 1 (run by
// parser.iterate before any value is read) reports invalid UTF-8, an unescaped control character
// in a string or a string left open without saying where; a document cut short is reported where
// a value was being read. The importers' errors name the byte (README: "bad input gets one line
// naming the file, the position and what was expected"), so the position is found here by one
// scalar pass over the text, only once an error is known.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <optional>
#include <string>

namespace fleetscope::importers {

struct JsonErrorPosition {
  size_t offset = 0;  // byte within the text
  std::string what;   // the error as the user reads it, without the "invalid JSON: " prefix
};

// The byte of `text` (size bytes) that `err` is about, and its wording, for the errors that
// simdjson reports without a usable position (UTF8_ERROR, UNESCAPED_CHARS, UNCLOSED_STRING,
// INCOMPLETE_ARRAY_OR_OBJECT); nullopt for any other error, or when the scan finds no such byte
// (then the caller's own position stands).
std::optional<JsonErrorPosition> locate_json_error(const char* text, size_t size,
                                                   simdjson::error_code err);

}  // namespace fleetscope::importers
