#include "fleetscope/store/capture_rows.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "fleetscope/store/table_io.h"

namespace fleetscope::store {

namespace {

// Calls fn.template operator()<Row>() for every event table's row type.
template <class Fn>
void for_each_event_table(Fn&& fn) {
#define FLEETSCOPE_VISIT(Row, plural) fn.template operator()<Row>();
  FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_VISIT)
#undef FLEETSCOPE_VISIT
}

}  // namespace

bool capture_has_rows(const Database& db, int64_t capture_id) {
  bool found = false;
  for_each_event_table([&]<class Row>() {
    if constexpr (!std::is_same_v<Row, DeviceSample>) {
      if (found) return;
      // EXISTS stops at the first row; the (captureId, start) indexes answer it without a scan.
      auto stmt = db.prepare(std::string("SELECT EXISTS (SELECT 1 FROM ") +
                             io::TableIo<Row>::table + " WHERE captureId = ?1)");
      stmt.bind(1, capture_id);
      found = stmt.step() && stmt.column_int(0) != 0;
    }
  });
  return found;
}

std::optional<int64_t> capture_last_row_ns(const Database& db, int64_t capture_id) {
  std::optional<int64_t> last;
  for_each_event_table([&]<class Row>() {
    if constexpr (!std::is_same_v<Row, DeviceSample> &&
                  requires { io::TableIo<Row>::last_time_sql; }) {
      auto stmt = db.prepare(io::TableIo<Row>::last_time_sql);
      stmt.bind(1, capture_id);
      if (stmt.step() && !stmt.column_is_null(0))
        last = std::max(last.value_or(stmt.column_int(0)), stmt.column_int(0));
    }
  });
  return last;
}

std::string capture_rows_key(const Database& db, int64_t capture_id) {
  std::string key;
  // Appends the columns of the one row `sql` (bound to the capture) gives, '/'-separated. Bytes
  // outside printable ASCII (a path's, a name's) are written %XX: the key is plain text.
  const auto add = [&](const char* label, const std::string& sql) {
    auto stmt = db.prepare(sql);
    stmt.bind(1, capture_id);
    key += label;
    if (stmt.step())
      for (int i = 0; i < stmt.column_count(); ++i) {
        key += i ? '/' : '=';
        if (stmt.column_is_null(i)) {
          key += '-';
          continue;
        }
        for (const unsigned char c : stmt.column_text(i)) {
          if (c >= 0x20 && c < 0x7f && c != '%') {
            key += static_cast<char>(c);
          } else {
            static constexpr char kHex[] = "0123456789ABCDEF";
            key += {'%', kHex[c >> 4], kHex[c & 15]};
          }
        }
      }
    key += ';';
  };
  add("capture",
      "SELECT kind, source, source_path, start_ns, end_ns, dropped_records FROM "
      "captures WHERE id = ?1");
  // Counted on the (captureId, ...) index alone: a largest rowid per capture would read the rowid
  // of every entry, 2-3x the time of the count (measured on the ResNet trace's 27k rows).
  for_each_event_table([&]<class Row>() {
    if constexpr (!std::is_same_v<Row, DeviceSample>) {
      const std::string table = io::TableIo<Row>::table;
      const char* extra = std::is_same_v<Row, Iteration> ? ", total(start), total(end)" : "";
      add(io::TableIo<Row>::table,
          "SELECT count(*)" + std::string(extra) + " FROM " + table + " WHERE captureId = ?1");
    }
  });
  add("gpus", "SELECT count(*), max(rowid) FROM TARGET_INFO_GPU WHERE captureId = ?1");
  add("processes",
      "SELECT count(*), max(rowid) FROM processes WHERE captureId = ?1 OR captureId IS NULL");
  add("workflows",
      "SELECT group_concat(w, ',') FROM (SELECT id || ':' || name || ':' || ifnull(user, '') || "
      "':' || labels AS w FROM workflows WHERE id IN (SELECT workflow_id FROM processes WHERE "
      "captureId = ?1 OR captureId IS NULL) ORDER BY id)");
  return key;
}

void delete_capture_rows(Database& db, int64_t capture_id) {
  for_each_event_table([&]<class Row>() {
    auto stmt = db.prepare(io::TableIo<Row>::delete_sql);
    stmt.bind(1, capture_id).execute();
  });
}

}  // namespace fleetscope::store
