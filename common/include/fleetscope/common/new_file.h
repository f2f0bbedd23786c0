// Creating an output's temporary file: always a new regular file of this process. The temporary
// name sits beside the output, often in a folder others may write (/tmp); opened with fopen or
// std::ofstream, a symbolic link planted under that name would make the command write its report
// or trace into whatever file the link names (the user's own, or root's). O_EXCL | O_NOFOLLOW
// refuses an existing name and a link, and the content goes through the descriptor so opened.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace fleetscope::common {

// A new, empty file at `path` open for writing, or -1 with errno set (EEXIST when the name is
// taken, by a link or anything else).
inline int create_new_file(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}

// Writes all of `data` to `fd`; false (errno set) when a write fails.
inline bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// `message` with the output's temporary name (every mention of it, SQLite side files included)
// replaced by the output's name as the user typed it: an error while writing (a full disk, a file
// size limit) names the file the user asked for, never "OUT.db.tmp-1234-567890".
inline std::string with_output_name(std::string message, const std::string& temp_path,
                                    const std::string& final_path) {
  if (temp_path.empty()) return message;
  for (size_t at = message.find(temp_path); at != std::string::npos;
       at = message.find(temp_path, at + final_path.size()))
    message.replace(at, temp_path.size(), final_path);
  return message;
}

}  // namespace fleetscope::common
