#include "fleetscope/importers/open_input.h"

#include <exception>

#include "fleetscope/store/error.h"
#include "fleetscope/store/read_policy.h"

namespace fleetscope::importers {

namespace {

// Only a fleetscope database has a `meta` table (schema/trace.sql); an nsys export has none.
bool has_meta_table(const std::string& path) {
  try {
    store::Database db = store::Database::open_external(path);
    auto st =
        db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
    return st.step() && st.column_int(0) > 0;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // SQLite's own words ("file is not a database", "database disk image is malformed") with
    // the file in front.
    throw InputError(path, "sqlite_master",
                     std::string("cannot read the SQLite schema: ") + e.what());
  }
}

}  // namespace

const char* describe(InputKind kind) {
  switch (kind) {
    case InputKind::fleetscope_database:
      return "fleetscope database";
    case InputKind::kineto_json:
      return "Kineto JSON trace";
    case InputKind::nsys_sqlite:
      return "nsys SQLite export";
  }
  return "input";
}

InputKind input_kind(const std::string& path) {
  switch (detect_format(path)) {
    case Format::kineto_json:
    case Format::kineto_json_gz:
      return InputKind::kineto_json;
    case Format::nsys_sqlite:
      return has_meta_table(path) ? InputKind::fleetscope_database : InputKind::nsys_sqlite;
    case Format::unknown:
      break;
  }
  throw InputError(path, "byte 0",
                   "not a trace: expected a fleetscope database, a Kineto JSON trace (.json, "
                   ".json.gz) or an nsys SQLite export");
}

store::Reader OpenedInput::reader() const {
  if (memory) return store::Reader(memory->another_connection(store::OpenMode::read_only));
  return store::Reader(path);
}

OpenedInput open_input(const std::string& path, const ImportOptions& options) {
  OpenedInput input;
  input.path = path;
  store::note_reading(path);
  input.kind = input_kind(path);
  if (input.kind == InputKind::fleetscope_database) return input;
  MemoryImport imported = import_to_memory(path, options);
  // Readers look up time windows and captures: give them the indexes the import skipped.
  imported.database.exec(store::index_sql());
  input.memory = std::make_shared<store::Database>(std::move(imported.database));
  return input;
}

}  // namespace fleetscope::importers
