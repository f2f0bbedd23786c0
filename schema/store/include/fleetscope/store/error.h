// Errors raised by the store and by everything that reads input files. They carry what a user
// needs to fix the input: the file, the position (byte offset, line, table) and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace fleetscope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input: message is one line, "FILE: POSITION: what was found, what was expected".
class InputError : public Error {
 public:
  InputError(const std::string& file, const std::string& position, const std::string& what)
      : Error(file + ": " + (position.empty() ? "" : position + ": ") + what) {}
};

}  // namespace fleetscope
