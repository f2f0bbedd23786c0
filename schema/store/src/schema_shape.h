// The shape of an opened file's fleetscope tables, checked before anything reads them: a file is
// untrusted input, and a view or a generated column in the place of a table would run whatever
// query its author wrote (endless rows, huge strings) inside every command that reads it.
#pragma once

#include <map>
#include <string>
#include <vector>

struct sqlite3;

namespace fleetscope::store {

struct ShapeColumn {
  std::string name, type;  // type upper-cased
  int hidden = 0;
};
// Tables of schema/trace.sql that a file has, with their columns (PRAGMA table_xinfo).
using SchemaShape = std::map<std::string, std::vector<ShapeColumn>>;

// Refuses (InputError naming the file and the object) a file where a table of schema/trace.sql is
// a view or a virtual table, has a generated or hidden column, or where any trigger exists
// (fleetscope's schema has none). With `check_types`, also a column of such a table whose declared
// type is not the schema's (run after migration, when the file should have the current schema).
// Returns the shape it read.
SchemaShape check_schema_shape(sqlite3* db, const std::string& path, bool check_types);

// The declared-type part of check_schema_shape, on a shape it returned: for a file found current
// after a check without types, so that an open reads its schema once.
void check_declared_types(const SchemaShape& shape, const std::string& path);

}  // namespace fleetscope::store
