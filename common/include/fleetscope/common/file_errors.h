// One wording for a file the user named that cannot be used: "cannot read PATH: REASON" and
// "cannot write PATH: REASON", PATH as the user typed it, REASON saying what is wrong and what was
// expected ("it is a directory; expected a trace file or a fleetscope database"). Checked before
// opening, so the message never names an internal temporary file or a library's own wording.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace fleetscope::common {

// "cannot read PATH", the subject of cannot_read's message (for error types that add ": REASON").
inline std::string cannot_read_subject(const std::string& path) {
  return "cannot read " + path;
}

inline std::string cannot_read(const std::string& path, const std::string& reason) {
  return cannot_read_subject(path) + ": " + reason;
}

inline std::string cannot_write(const std::string& path, const std::string& reason) {
  return "cannot write " + path + ": " + reason;
}

// Why `path` cannot be read as a file of kind `expected` (e.g. "a fleetscope database"), or
// nullopt when it is a readable regular file (its content is the reader's business).
inline std::optional<std::string> input_problem(const std::string& path,
                                                const std::string& expected) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    if (ec && ec != std::errc::no_such_file_or_directory) return ec.message();
    return "no such file; expected " + expected;
  }
  if (fs::is_directory(status)) return "it is a directory; expected " + expected;
  if (!fs::is_regular_file(status)) return "not a regular file; expected " + expected;
  if (::access(path.c_str(), R_OK) != 0) return std::strerror(errno);
  return std::nullopt;
}

// Why a new file cannot be written at `path` (its folder missing, not a folder, not writable,
// or `path` itself a directory), or nullopt when it can be tried.
inline std::optional<std::string> output_problem(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "it is a directory; expected a file name";
  const fs::path parent = fs::path(path).parent_path();
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  const fs::file_status status = fs::status(folder, ec);
  if (!fs::exists(status)) return "folder " + folder.string() + " does not exist";
  if (!fs::is_directory(status)) return folder.string() + " is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return "folder " + folder.string() + ": " + std::strerror(errno);
  return std::nullopt;
}

// Why a command reading `inputs` must not write `output`, checked before anything is read or
// written (the text after "error: "), or nullopt. An existing file (a link to nowhere too: the
// rename would replace the link) is replaced only with --force, as `import` and `run` refuse it
// (Nsight Systems' -o likewise, unless --force-overwrite). The names SQLite gives an input's side
// files (INPUT-wal, INPUT-shm, INPUT-journal) are refused even with --force: a file put there is
// taken as the input's log on its next open. The output being the input itself (through any link)
// is refused by store::AtomicOutput (store/input_files.h).
inline std::optional<std::string> output_refusal(const std::string& output,
                                                 const std::vector<std::string>& inputs,
                                                 bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out_path = fs::weakly_canonical(fs::absolute(output, ec), ec);
  for (const std::string& input : inputs) {
    std::error_code input_ec;
    const fs::path in_path = fs::weakly_canonical(fs::absolute(input, input_ec), input_ec);
    for (const char* suffix : {"-wal", "-shm", "-journal"}) {
      if (output != input + suffix &&
          (ec || input_ec || out_path.native() != in_path.native() + suffix))
        continue;
      return cannot_write(output, std::string("it is the name of the ") + (suffix + 1) +
                                      " file of the input " + input +
                                      "; expected another file for the output (SQLite would take "
                                      "it as the input's own)");
    }
  }
  if (!force && fs::exists(fs::symlink_status(output, ec)))
    return output + ": already exists (use --force to replace it)";
  return std::nullopt;
}

// What the first bytes of `path` look like, for an error about a file of the wrong kind: "a PNG
// image", "gzip data", "text starting with 'hello'", "an empty file", or its first bytes in hex.
inline std::string describe_file_start(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return "unreadable content";
  unsigned char head[16] = {};
  const size_t n = std::fread(head, 1, sizeof head, file);
  std::fclose(file);
  auto starts = [&](const char* magic, size_t length) {
    return n >= length && std::memcmp(head, magic, length) == 0;
  };
  if (n == 0) return "an empty file";
  if (starts("\x89PNG", 4)) return "a PNG image";
  if (starts("\xFF\xD8\xFF", 3)) return "a JPEG image";
  if (starts("GIF8", 4)) return "a GIF image";
  if (starts("%PDF", 4)) return "a PDF document";
  if (starts("PK\x03\x04", 4)) return "a ZIP archive";
  if (starts("\x7F"
             "ELF",
             4))
    return "an ELF program or library";
  if (starts("\x1F\x8B", 2)) return "gzip data";
  if (starts("SQLite format 3", 15)) return "an SQLite database";
  bool text = true;
  for (size_t i = 0; i < n; ++i)
    text = text && (head[i] == '\n' || head[i] == '\r' || head[i] == '\t' ||
                    (head[i] >= 0x20 && head[i] < 0x7F));
  if (text) {
    std::string start(reinterpret_cast<const char*>(head), std::min<size_t>(n, 12));
    for (char& c : start)
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return "text starting with '" + start + "'";
  }
  static const char* digits = "0123456789abcdef";
  std::string bytes = "bytes";
  for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) {
    bytes += ' ';
    bytes += digits[head[i] >> 4];
    bytes += digits[head[i] & 15];
  }
  return bytes;
}

}  // namespace fleetscope::common
