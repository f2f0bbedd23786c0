// The files this process reads as input, so that no output replaces one of them. `fleetscope
// export run.db -o run.db` (or `report`, `analyze -o`, `import x.json -o x.json --force`) used to
// write its result over the database or trace it was reading: the input was lost. Every reader
// notes its file here (store::note_reading, importers::import_files), and AtomicOutput refuses an
// output that is one of them (the same file: same device and inode, through any link).
#pragma once

#include <optional>
#include <string>

namespace fleetscope::store {

// Remembers `path` as an input of this process (a path that does not exist is ignored).
void note_input_file(const std::string& path);

// The input (as it was named) that `path` is the same file as, if any.
std::optional<std::string> input_file_at(const std::string& path);

}  // namespace fleetscope::store
