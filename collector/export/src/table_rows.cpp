#include "table_rows.h"

#include <sqlite3.h>

#include "fleetscope/export/json_text.h"
#include "fleetscope/store/checked_column.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::exporter {
namespace {

std::string select_sql(const columns::Table& table, const std::string& from_where) {
  std::string sql = "SELECT ";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (i) sql += ", ";
    sql += '"';
    sql += table.columns[i].name;
    sql += '"';
  }
  return sql + from_where;
}

// The label an ENUM_* table gives a value, from the store's label functions (rows.h), which are
// the same labels the file's ENUM_* tables hold; nullptr for an enum the store has no labels for.
const char* enum_label(std::string_view labels, int32_t value) {
  if (labels == "ENUM_CUDA_MEMCPY_OPER") return store::memcpy_kind_label(value);
  if (labels == "ENUM_CUDA_MEM_KIND") return store::memory_kind_label(value);
  if (labels == "ENUM_CUPTI_SYNC_TYPE") return store::sync_type_label(value);
  return nullptr;
}

}  // namespace

TableRows::TableRows(const store::Database& db, const columns::Table& table,
                     const std::string& from_where, std::optional<int64_t> capture)
    : table_(table),
      statement_(db.prepare(select_sql(table, from_where))),
      integers_(table.columns.size()),
      null_(table.columns.size()) {
  if (capture) statement_.bind(1, *capture);
}

bool TableRows::step() {
  if (!statement_.step()) return false;
  ++row_;
  for (size_t i = 0; i < table_.columns.size(); ++i) {
    const columns::Column& c = table_.columns[i];
    const int col = static_cast<int>(i);
    const int type = sqlite3_column_type(statement_.raw(), col);
    null_[i] = type == SQLITE_NULL;
    integers_[i] = 0;
    // The names are string literals of the generated description: NUL-terminated.
    const char* table = table_.name.data();
    const char* name = c.name.data();
    if (null_[i] && !c.nullable) refuse(name, "is NULL, expected a value (NOT NULL column)");
    if (null_[i]) continue;
    switch (c.kind) {
      case columns::Kind::integer:
      case columns::Kind::string_id:
        integers_[i] =
            c.time ? store::checked_time(statement_, col, "", table, row_, name)
                   : store::checked_int(statement_, col, "", table, row_, name, c.min, c.max);
        break;
      case columns::Kind::real:
        if (type != SQLITE_FLOAT && type != SQLITE_INTEGER)
          refuse(name, std::string("is ") + (type == SQLITE_TEXT ? "text" : "a blob") +
                           ", expected a number");
        break;
      case columns::Kind::text:
        break;
    }
  }
  return true;
}

void TableRows::refuse(const char* column, const std::string& what) const {
  throw InputError(store::connection_path(sqlite3_db_handle(statement_.raw())),
                   "table " + std::string(table_.name) + " row " + std::to_string(row_),
                   "column " + std::string(column) + " " + what);
}

int32_t TableRows::int32(int column) const {
  // step() checked the value against the column's range; a column declared wider is a bug here.
  const columns::Column& c = table_.columns[static_cast<size_t>(column)];
  if (c.min < INT32_MIN || c.max > INT32_MAX)
    throw Error("export: column " + std::string(c.name) + " is not an int32 column");
  return static_cast<int32_t>(integer(column));
}

void TableRows::append_args(std::string& out,
                            const std::unordered_map<int64_t, std::string>& strings) const {
  const auto append_value = [&](size_t i) {
    const columns::Column& c = table_.columns[i];
    const int col = static_cast<int>(i);
    if (null_[i]) {
      out += "null";
      return;
    }
    switch (c.kind) {
      case columns::Kind::integer:
        if (!c.labels.empty())
          if (const char* label = enum_label(c.labels, static_cast<int32_t>(integers_[i]))) {
            append_json_string(out, label);
            return;
          }
        append_integer(out, integers_[i]);
        return;
      case columns::Kind::string_id: {
        auto it = strings.find(integers_[i]);
        append_json_string(out, it == strings.end() ? std::string_view("<unknown string>")
                                                    : std::string_view(it->second));
        return;
      }
      case columns::Kind::real:
        append_double(out, statement_.column_double(col));
        return;
      case columns::Kind::text: {
        const auto* text = sqlite3_column_text(statement_.raw(), col);
        const int bytes = sqlite3_column_bytes(statement_.raw(), col);
        append_json_string(
            out, std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(bytes)));
        return;
      }
    }
  };

  const size_t n = table_.columns.size();
  for (size_t i = 0; i < n;) {
    const columns::Column& c = table_.columns[i];
    if (c.chrome != columns::Chrome::arg) {
      ++i;
      continue;
    }
    size_t run = i + 1;  // columns sharing the arg name: one array (Kineto's "grid": [x, y, z])
    while (run < n && table_.columns[run].chrome == columns::Chrome::arg &&
           table_.columns[run].chrome_arg == c.chrome_arg)
      ++run;
    bool all_null = true;
    for (size_t k = i; k < run; ++k) all_null = all_null && null_[k];
    if (!all_null) {
      if (!out.empty()) out += ',';
      append_json_string(out, c.chrome_arg);
      out += ':';
      if (run - i == 1) {
        append_value(i);
      } else {
        out += '[';
        for (size_t k = i; k < run; ++k) {
          if (k > i) out += ',';
          append_value(k);
        }
        out += ']';
      }
    }
    i = run;
  }
}

}  // namespace fleetscope::exporter
