#include "fleetscope/store/input_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace fleetscope::store {

namespace {

std::mutex g_mu;
std::vector<std::string> g_inputs;  // as named; a handful per command, the daemon's few reopened

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void note_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  std::lock_guard lock(g_mu);
  if (std::find(g_inputs.begin(), g_inputs.end(), path) == g_inputs.end()) g_inputs.push_back(path);
}

std::optional<std::string> input_file_at(const std::string& path) {
  struct stat output {};
  if (::stat(path.c_str(), &output) != 0) return std::nullopt;
  std::lock_guard lock(g_mu);
  // Each input is looked at again now: one deleted since (its inode number free to be reused by
  // a new file) is forgotten rather than mistaken for the output.
  std::optional<std::string> found;
  std::erase_if(g_inputs, [&](const std::string& input) {
    struct stat st {};
    if (::stat(input.c_str(), &st) != 0) return true;
    if (!found && same_file(st, output)) found = input;
    return false;
  });
  return found;
}

}  // namespace fleetscope::store
