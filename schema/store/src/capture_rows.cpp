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

void delete_capture_rows(Database& db, int64_t capture_id) {
  for_each_event_table([&]<class Row>() {
    auto stmt = db.prepare(io::TableIo<Row>::delete_sql);
    stmt.bind(1, capture_id).execute();
  });
}

}  // namespace fleetscope::store
