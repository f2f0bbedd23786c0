// nsys's shortName: the bare function name of a demangled kernel signature.
#include <string>

#include "fleetscope/store/reader.h"

namespace fleetscope::store {

std::string short_kernel_name(const std::string& demangled) {
  // Cut the argument list: the last top-level '(' (templates may contain parentheses, e.g.
  // "(anonymous namespace)", so track angle-bracket depth from the right).
  size_t end = demangled.size();
  int depth = 0;
  bool has_args = !demangled.empty() && demangled.back() == ')';
  for (size_t i = demangled.size(); has_args && i-- > 0;) {
    char c = demangled[i];
    if (c == ')')
      ++depth;
    else if (c == '(') {
      if (--depth == 0) {
        // The '(' that closes to the end of the string starts the argument list, unless the
        // name itself ends there (e.g. "(anonymous namespace)::k" has no args).
        end = i;
        break;
      }
    }
  }
  if (depth != 0 || end == 0) end = demangled.size();
  std::string head = demangled.substr(0, end);
  // Drop a trailing template argument list.
  if (!head.empty() && head.back() == '>') {
    int angle = 0;
    for (size_t i = head.size(); i-- > 0;) {
      if (head[i] == '>')
        ++angle;
      else if (head[i] == '<' && --angle == 0) {
        head.resize(i);
        break;
      }
    }
  }
  // Drop the return type (text up to the last top-level space) and the namespace qualifiers.
  int angle = 0;
  size_t start = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    char c = head[i];
    if (c == '<')
      ++angle;
    else if (c == '>')
      --angle;
    else if (angle == 0 && c == ' ')
      start = i + 1;
    else if (angle == 0 && c == ':' && i + 1 < head.size() && head[i + 1] == ':')
      start = i + 2;
  }
  std::string result = head.substr(start);
  return result.empty() ? demangled : result;
}

}  // namespace fleetscope::store
