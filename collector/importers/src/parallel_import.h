// Several trace files imported at once into one store::Writer (import_files with more than one
// file): each file is parsed and translated on its own thread, the rows meet in the writer's
// queue. The result is the serial import's: capture i is file i, and each file's metadata
// (hosts, workflows, processes, GPUs, the capture's final fields) is written in file order, so
// ids and "last file wins" rows are those of the serial import; only the rows' physical order
// (rowid) differs.
#pragma once

#include <string>
#include <vector>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::importers {

// Files imported concurrently: min(files, cores), at least 1.
size_t parallel_import_workers(size_t files);

// Imports `paths` into `writer` with `workers` threads (the calling thread is one of them); each
// import gets an equal share of options.memory_budget_bytes. Throws the error of the first file
// (in file order) that failed; the other imports are stopped.
std::vector<ImportResult> import_in_parallel(const std::vector<std::string>& paths,
                                             store::Writer& writer, const ImportOptions& options,
                                             size_t workers);

}  // namespace fleetscope::importers
