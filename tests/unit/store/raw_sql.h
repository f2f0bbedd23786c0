// Runs SQL on a file through SQLite itself, not through fleetscope's store: the store tests use it
// to make files the store did not write (older schemas, rows added by hand, damage).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

namespace fleetscope::test_support {

inline void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << path << ": " << text;
}

}  // namespace fleetscope::test_support
