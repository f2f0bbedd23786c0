// The one dispatch every reading command (analyze, report, info, export, fleet, diff, candidates,
// the GUI) uses to open what the user names: a fleetscope trace database is opened as it is; a
// Kineto JSON trace (.json, .json.gz) or an Nsight Systems SQLite export (`nsys export --type
// sqlite`) is imported into a private in-memory database first, through the importers above, so
// every reading command works on all three without a separate `fleetscope import` step.
#pragma once

#include <memory>
#include <string>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::importers {

enum class InputKind { fleetscope_database, kineto_json, nsys_sqlite };
// "fleetscope database", "Kineto JSON trace", "nsys SQLite export".
const char* describe(InputKind kind);

// Which of the three `path` is, by content (detect_format, then the `meta` table that only a
// fleetscope database has). Throws InputError naming the file for anything else: a directory, an
// empty or unreadable file, a file that is neither JSON nor SQLite, a damaged SQLite file.
InputKind input_kind(const std::string& path);

struct OpenedInput {
  std::string path;
  InputKind kind = InputKind::fleetscope_database;
  // The imported database (kept alive here); null for a fleetscope database.
  std::shared_ptr<store::Database> memory;

  bool imported() const { return memory != nullptr; }
  // A new read-only connection to the input.
  store::Reader reader() const;
};

// Opens `path` as input_kind() says. A trace or an nsys export is imported with `options` (its
// progress callback reports the import); bad input throws InputError naming the file and position,
// as `fleetscope import` would.
OpenedInput open_input(const std::string& path, const ImportOptions& options = {});

}  // namespace fleetscope::importers
