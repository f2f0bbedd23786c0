#include "csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "fleetscope/common/file_errors.h"

namespace fleetscope::sharer::csv {

namespace {

std::vector<std::string> split(std::string_view line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.emplace_back(
        line.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::string column_label(const Table& table, size_t column) {
  std::string label = "column " + std::to_string(column + 1);
  if (column < table.header.size()) label += " (" + excerpt(table.header[column]) + ")";
  return label;
}

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 40;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "... (" + std::to_string(text.size()) + " characters)";
}

void fail(const std::string& path, int line, const std::string& expected) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": expected " + expected);
}

void fail_value(const Table& table, const Row& row, size_t column, const char* what,
                const std::string& expected) {
  const std::string found = column < row.fields.size() ? row.fields[column] : std::string();
  throw std::runtime_error(table.path + ":" + std::to_string(row.line) + ": " +
                           column_label(table, column) + ": expected " + what + " " + expected +
                           ", found '" + excerpt(found) + "'");
}

void require_unique(const Table& table, size_t column, const char* what) {
  std::unordered_map<std::string_view, int> first_line;
  for (const Row& row : table.rows) {
    if (column >= row.fields.size()) continue;
    auto [at, added] = first_line.emplace(row.fields[column], row.line);
    if (!added)
      fail_value(table, row, column, what,
                 "unique in the file (line " + std::to_string(at->second) + " has it too)");
  }
}

void require_unique_ints(const Table& table, size_t column, const char* what) {
  std::unordered_map<int64_t, int> first_line;
  for (const Row& row : table.rows) {
    if (column >= row.fields.size()) continue;
    auto [at, added] = first_line.emplace(to_int(table, row, column, what), row.line);
    if (!added)
      fail_value(table, row, column, what,
                 "unique in the file (line " + std::to_string(at->second) + " has it too)");
  }
}

Table parse(std::string_view text, const std::string& source, bool has_header, size_t min_fields,
            bool skip_comments) {
  Table table;
  table.path = source;
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.remove_prefix(3);  // UTF-8 byte order mark
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (skip_comments && line.front() == '#') continue;
    if (line.find('\0') != std::string_view::npos) fail(source, number, "text, found a NUL byte");
    auto fields = split(line);
    if (has_header && table.header.empty()) {
      // Two columns of one name: the first was read and the second ignored without a word.
      for (size_t i = 0; i < fields.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (fields[i] == fields[j])
            fail(source, number,
                 "each column named once, found '" + excerpt(fields[i]) + "' in columns " +
                     std::to_string(j + 1) + " and " + std::to_string(i + 1));
      table.header = std::move(fields);
      if (table.header.size() > min_fields) min_fields = table.header.size();
      continue;
    }
    if (fields.size() < min_fields) {
      fail(source, number,
           std::to_string(min_fields) + " comma-separated fields, found " +
               std::to_string(fields.size()));
    }
    table.rows.push_back(Row{std::move(fields), number});
  }
  if (has_header && table.header.empty()) fail(source, 1, "a header line");
  return table;
}

void throw_cannot_open(const std::string& path, const std::string& expected) {
  const int open_error = errno;
  throw std::runtime_error(common::cannot_read(
      path, common::input_problem(path, expected)
                .value_or(std::string(std::strerror(open_error)) + "; expected " + expected)));
}

std::string read_text(const std::string& path, const std::string& expected) {
  if (auto problem = common::input_problem(path, expected))
    throw std::runtime_error(common::cannot_read(path, *problem));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_cannot_open(path, expected);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}

Table read(const std::string& path, bool has_header, size_t min_fields, bool skip_comments) {
  return parse(read_text(path, "a CSV file"), path, has_header, min_fields, skip_comments);
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
  if (error != std::errc{} || end != text.data() + text.size() || text.empty()) {
    fail_value(table, row, column, what, "as an integer (-2^63..2^63-1)");
  }
  return value;
}

double to_double(const Table& table, const Row& row, size_t column, const char* what) {
  const std::string& text = row.fields[column];
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty() ||
      !std::isfinite(value)) {
    fail_value(table, row, column, what, "as a finite number");
  }
  return value;
}

int64_t to_int_in(const Table& table, const Row& row, size_t column, const char* what, int64_t min,
                  int64_t max) {
  const int64_t value = to_int(table, row, column, what);
  if (value < min || value > max) {
    fail_value(table, row, column, what, "in " + std::to_string(min) + ".." + std::to_string(max));
  }
  return value;
}

double to_double_in(const Table& table, const Row& row, size_t column, const char* what, double min,
                    double max) {
  const double value = to_double(table, row, column, what);
  if (value < min || value > max) {
    fail_value(table, row, column, what, "in [" + number_text(min) + ", " + number_text(max) + "]");
  }
  return value;
}

}  // namespace fleetscope::sharer::csv
