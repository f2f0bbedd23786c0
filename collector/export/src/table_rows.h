// The rows of one table, read by the table's description (fleetscope/store/table_columns.h,
// generated from schema/tables.py): every column is selected, every value is checked against its
// column's type and range before anything narrows it, and every column the description marks as a
// Chrome-trace arg is written by append_args. The exporter names only the columns it places in the
// event itself (ts, dur, name, pid, tid), so a column added in tables.py reaches the export with no
// edit here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/table_columns.h"

namespace fleetscope::exporter {

namespace columns = store::table_columns;

// The index of `column` in `table`; a misspelt name fails the build.
consteval int column_index(const columns::Table& table, std::string_view column) {
  const int index = table.index(column);
  if (index < 0) throw "no such column in schema/tables.py";
  return index;
}

class TableRows {
 public:
  // Rows of `table`: "SELECT <every column>" then `from_where` (" FROM <table> ... WHERE ...":
  // the export scope's rows of the table, its conditions, an " ORDER BY"); `capture`, when given,
  // is bound as ?1 (the capture store::capture_rows_sql's text names).
  TableRows(const store::Database& db, const columns::Table& table, const std::string& from_where,
            std::optional<int64_t> capture = std::nullopt);

  // Next row, every value checked: a value of the wrong type (a real or text in an INTEGER
  // column), out of its column's range (an int32 column holding 2^40, a time beyond +-2^62 ns) or
  // NULL in a NOT NULL column is an InputError naming the file, table, row and column, as
  // `analyze` refuses it (store::checked_int).
  bool step();

  bool is_null(int column) const { return null_[static_cast<size_t>(column)]; }
  int64_t integer(int column) const { return integers_[static_cast<size_t>(column)]; }
  std::optional<int64_t> optional_integer(int column) const {
    if (is_null(column)) return std::nullopt;
    return integer(column);
  }
  int32_t int32(int column) const;  // a column whose description bounds it to int32
  double real(int column) const { return statement_.column_double(column); }
  std::string text(int column) const { return statement_.column_text(column); }

  // Appends every column the description marks as an arg to `out` as JSON object members
  // ("key":value, comma-separated, with a leading comma unless `out` is empty): NULL values are
  // left out, columns sharing one arg name form an array, enum columns show their label, and
  // StringIds ids their text from `strings`.
  void append_args(std::string& out, const std::unordered_map<int64_t, std::string>& strings) const;

 private:
  [[noreturn]] void refuse(const char* column, const std::string& what) const;

  const columns::Table& table_;
  store::Statement statement_;
  std::vector<int64_t> integers_;
  std::vector<bool> null_;
  int64_t row_ = 0;
};

}  // namespace fleetscope::exporter
