#include "csv.h"

#include <charconv>
#include <fstream>
#include <stdexcept>

namespace fleetscope::sharer::csv {

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

}  // namespace

void fail(const std::string& path, int line, const std::string& expected) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": expected " + expected);
}

Table read(const std::string& path, bool has_header, size_t min_fields) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  Table table;
  table.path = path;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto fields = split(line);
    if (has_header && table.header.empty()) {
      table.header = std::move(fields);
      if (table.header.size() > min_fields) min_fields = table.header.size();
      continue;
    }
    if (fields.size() < min_fields) {
      fail(path, number,
           std::to_string(min_fields) + " comma-separated fields, found " +
               std::to_string(fields.size()));
    }
    table.rows.push_back(Row{std::move(fields), number});
  }
  if (has_header && table.header.empty()) fail(path, 1, "a header line");
  return table;
}

size_t Table::column(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  fail(path, 1, "a column named '" + name + "' in the header");
}

bool Table::has_column(const std::string& name) const {
  for (const auto& field : header) {
    if (field == name) return true;
  }
  return false;
}

int64_t to_int(const Table& table, const Row& row, size_t column, const char* what) {
  const std::string& text = row.fields[column];
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size()) {
    fail(table.path, row.line, std::string(what) + " as an integer, found '" + text + "'");
  }
  return value;
}

double to_double(const Table& table, const Row& row, size_t column, const char* what) {
  const std::string& text = row.fields[column];
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
    // fall through to the error below
  }
  fail(table.path, row.line, std::string(what) + " as a number, found '" + text + "'");
}

}  // namespace fleetscope::sharer::csv
