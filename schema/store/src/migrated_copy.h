// The files of the migrated-copy cache (database.cpp makes and opens the copies; this part knows
// where they live, what names them and when one may be used or removed). A read-only open of an
// older schema reads a copy migrated once per content of the file and kept here, instead of
// copying and migrating the whole file for every connection (docs/gui.md, "Older files").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fleetscope::store::migrated_copy {

// What identifies the content of a database file without reading it all: device, inode, size,
// modification and change times (ns), the size and time of its -wal when there is one, and a
// hash of the SQLite header (its change counter) and of 8 pages spread over the file. Reused
// inode numbers and coarse timestamps alone could name a new file like a removed one. 16 hex
// digits; nothing when the file cannot be read.
std::optional<std::string> identity(const std::string& path);

// The folder of migrated copies: $XDG_CACHE_HOME/fleetscope/migrated, else
// ~/.cache/fleetscope/migrated, made 0700 when missing; empty when there is none that this user
// alone owns and may write (a folder its owner made read-only is not written either).
std::string folder();

// The copy of `source` with content `identity` in `folder`: "<hash of the absolute path>-<file
// name>.<identity>.v<schema>.db".
std::string entry_path(const std::string& folder, const std::string& source,
                       const std::string& identity);

// Whether the entry is a finished copy: a regular file of this user (no link) whose size is the
// one its SQLite header states (a copy cut short is never read).
bool entry_complete(const std::string& entry);

// Marks an entry as used now (its modification time: the least recently used go first).
void touch(const std::string& entry);

// Notes beside the entry which file it is a copy of ("<entry>.source": the absolute path).
void note_source(const std::string& entry, const std::string& source);

// After `kept` was written: removes the other copies of the same source (made from content that
// has changed since), copies of files that are gone (a test's temporary folder) or unused for 30
// days, then the least recently used ones while all together take more than `max_bytes` (`kept`
// always stays).
void clean(const std::string& folder, const std::string& kept, uint64_t max_bytes);

// An exclusive lock on the folder's build lock file (flock), held while one copy is made: another
// connection or process that wants the same copy waits for it instead of making its own. Not
// locked (locked() false) when the lock file cannot be opened.
class BuildLock {
 public:
  explicit BuildLock(const std::string& folder);
  ~BuildLock();
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  bool locked() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace fleetscope::store::migrated_copy
