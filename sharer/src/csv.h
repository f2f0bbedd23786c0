#pragma once
// Minimal reader for the plain comma-separated job traces (no quoting in any of them). Every
// error names the file and line and says what was expected.

#include <cstdint>
#include <string>
#include <vector>

namespace fleetscope::sharer::csv {

struct Row {
  std::vector<std::string> fields;
  int line = 0;
};

struct Table {
  std::string path;
  std::vector<std::string> header;  // empty for header-less files
  std::vector<Row> rows;

  // Index of a header column; throws "PATH: missing column NAME" when absent.
  size_t column(const std::string& name) const;
  bool has_column(const std::string& name) const;
};

// Reads `path`. With `has_header`, the first line names the columns; every row must have at
// least `min_fields` fields (or as many as the header).
Table read(const std::string& path, bool has_header, size_t min_fields = 0);

[[noreturn]] void fail(const std::string& path, int line, const std::string& expected);
int64_t to_int(const Table& table, const Row& row, size_t column, const char* what);
double to_double(const Table& table, const Row& row, size_t column, const char* what);

}  // namespace fleetscope::sharer::csv
