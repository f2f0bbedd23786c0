#include "schema_shape.h"

#include <sqlite3.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"

namespace fleetscope::store {
namespace {

using Column = ShapeColumn;
using Shape = SchemaShape;

std::string upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

// The columns of every table `db` has (PRAGMA table_xinfo: generated and hidden ones too). One
// statement, rebound per table: every open runs this over some thirty tables, and preparing it
// anew each time was most of an open's cost (the daemon opens a connection per read).
Shape shape_of(sqlite3* db, const std::vector<std::string>& tables) {
  Shape shape;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name, type, hidden FROM pragma_table_xinfo(?1)", -1, &stmt,
                         nullptr) != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return shape;
  }
  for (const auto& table : tables) {
    sqlite3_reset(stmt);
    sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    auto& columns = shape[table];
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      auto text = [&](int i) {
        const unsigned char* t = sqlite3_column_text(stmt, i);
        return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
      };
      columns.push_back({text(0), upper(text(1)), sqlite3_column_int(stmt, 2)});
    }
  }
  sqlite3_finalize(stmt);
  return shape;
}

// The tables of schema/trace.sql with their columns, from a private in-memory database made once.
const Shape& expected_shape() {
  static const Shape shape = [] {
    sqlite3* db = nullptr;
    sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    sqlite3_exec(db, schema_sql().c_str(), nullptr, nullptr, nullptr);
    std::vector<std::string> tables;
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &stmt,
                       nullptr);
    while (sqlite3_step(stmt) == SQLITE_ROW)
      tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    sqlite3_finalize(stmt);
    Shape result = shape_of(db, tables);
    sqlite3_close(db);
    return result;
  }();
  return shape;
}

struct SchemaObject {
  std::string type, name, sql;
};

// The schema's objects; none when the schema cannot be read at all (not a SQLite file, a damaged
// one): then nothing else can be read either, and the schema_version read that follows says why
// in the wording every reader uses (unreadable_file.h).
std::vector<SchemaObject> objects_of(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT type, name, sql FROM sqlite_master", -1, &stmt, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(stmt);
    return {};
  }
  std::vector<SchemaObject> objects;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto text = [&](int i) {
      const unsigned char* t = sqlite3_column_text(stmt, i);
      return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
    };
    objects.push_back({text(0), text(1), text(2)});
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) return {};
  return objects;
}

}  // namespace

SchemaShape check_schema_shape(sqlite3* db, const std::string& path, bool check_types) {
  const Shape& expected = expected_shape();
  std::vector<std::string> present;
  for (const auto& object : objects_of(db)) {
    if (object.type == "trigger")
      throw InputError(path, "trigger " + object.name,
                       "a fleetscope database has no triggers; refusing a file with one");
    auto known = expected.find(object.name);
    if (known == expected.end()) continue;
    if (object.type == "view")
      throw InputError(path, "view " + object.name,
                       "'" + object.name + "' must be a table, not a view");
    if (object.type == "table" && upper(object.sql).rfind("CREATE VIRTUAL", 0) == 0)
      throw InputError(path, "table " + object.name,
                       "'" + object.name + "' must be an ordinary table, not a virtual table");
    if (object.type == "table") present.push_back(object.name);
  }
  Shape actual = shape_of(db, present);
  for (const auto& [table, columns] : actual)
    for (const auto& column : columns)
      if (column.hidden != 0)
        throw InputError(path, "table " + table + " column " + column.name,
                         "generated or hidden columns are not part of the schema");
  if (check_types) check_declared_types(actual, path);
  return actual;
}

void check_declared_types(const SchemaShape& shape, const std::string& path) {
  const Shape& expected = expected_shape();
  for (const auto& [table, columns] : shape) {
    auto known = expected.find(table);
    if (known == expected.end()) continue;
    std::map<std::string, const Column*> wanted;
    for (const auto& column : known->second) wanted[column.name] = &column;
    for (const auto& column : columns) {
      auto it = wanted.find(column.name);
      if (it != wanted.end() && column.type != it->second->type)
        throw InputError(
            path, "table " + table + " column " + column.name,
            "declared type '" + column.type + "', expected '" + it->second->type + "'");
    }
  }
}

}  // namespace fleetscope::store
