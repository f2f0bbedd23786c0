#include "fleetscope/store/capture_rows.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>

#include <sqlite3.h>

#include "connection_memo.h"
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

std::string plain_sql(const std::string& table, const std::string& name, const std::string& p) {
  return " FROM " + table + (name == table ? "" : " AS " + name) + " WHERE " + name +
         ".captureId = " + p;
}

std::string ranges_sql(const std::string& table, const std::string& name, const std::string& p) {
  return " FROM (SELECT first_rowid, last_rowid FROM capture_row_ranges WHERE tbl = '" + table +
         "' AND captureId = " + p + ") AS capture_ranges CROSS JOIN " + table +
         (name == table ? "" : " AS " + name) + " ON " + name +
         ".rowid BETWEEN capture_ranges.first_rowid AND capture_ranges.last_rowid WHERE " + name +
         ".captureId = " + p;
}

// True when an index of `table` begins with (captureId, start) (or ts): the plain filter then
// reads a capture's rows by time from the index.
bool has_capture_time_index(const Database& db, const std::string& table) {
  auto s = db.prepare(
      "SELECT 1 FROM pragma_index_list(?1) AS l, pragma_index_info(l.name) AS a, "
      "pragma_index_info(l.name) AS b WHERE a.seqno = 0 AND a.name = 'captureId' AND b.seqno = 1 "
      "AND b.name IN ('start', 'ts') LIMIT 1");
  s.bind(1, table);
  return s.step();
}

// Says once per file, table and capture that its ranges are not where its rows are.
void note_ranges_broken(const Database& db, const std::string& table, int64_t capture_id,
                        const std::string& why) {
  static std::mutex mutex;
  static std::set<std::tuple<std::string, std::string, int64_t>> said;
  std::lock_guard lock(mutex);
  if (!said.emplace(db.path(), table, capture_id).second) return;
  std::cerr << "fleetscope: " << db.path() << ": table " << table << ": capture " << capture_id
            << "'s rows are not where capture_row_ranges says (" << why
            << "); reading them by captureId instead (slower on a file without per-capture "
               "indexes)\n";
}

}  // namespace

bool has_row_ranges(const std::string& table) {
  bool ranged = false;
  for_each_event_table([&]<class Row>() {
    if (table == io::TableIo<Row>::table) ranged = io::TableIo<Row>::row_ranges;
  });
  return ranged;
}

namespace {

using RangesCheck = RangesVerdict;

std::atomic<uint64_t> g_range_checks{0};

// In one statement, on one snapshot of the file: the rows the capture's ranges recorded; whether
// two of them overlap (the writer never makes such ranges; a row in both would be read twice: in
// the order of the key, a range starting at or before the end of the one before it); the
// capture's rows found in them; and whether the table's last row has a capture but lies in no
// range of it (rows appended other than through store::Writer, which records its rows' ranges in
// the transaction that inserts them). Rowids changed (a VACUUM) or rows deleted one by one make
// the rows found differ from those recorded.
RangesCheck check_ranges(const Database& db, const std::string& table, int64_t capture_id) {
  auto check = db.prepare(
      "SELECT want, overlaps, (SELECT count(*)" + ranges_sql(table, table, "?2") +
      "), (SELECT count(*) FROM (SELECT rowid AS id, captureId AS c FROM " + table +
      " ORDER BY rowid DESC LIMIT 1) AS l WHERE l.c IS NOT NULL AND ifnull((SELECT last_rowid "
      "FROM capture_row_ranges WHERE tbl = ?1 AND captureId = l.c AND first_rowid <= l.id ORDER "
      "BY first_rowid DESC LIMIT 1), -1) < l.id) FROM (SELECT total(rows) AS want, "
      "total(first_rowid <= previous) AS overlaps FROM (SELECT rows, first_rowid, "
      "lag(last_rowid) OVER (ORDER BY first_rowid) AS previous FROM capture_row_ranges WHERE tbl "
      "= ?1 AND captureId = ?2))");
  check.bind(1, table).bind(2, capture_id);
  ++g_range_checks;
  RangesCheck c;
  if (!check.step()) return c;
  const auto want = static_cast<int64_t>(check.column_double(0));
  c.found = check.column_int(2);
  if (check.column_double(1) > 0)
    note_ranges_broken(db, table, capture_id, "its ranges overlap");
  else if (want != c.found)
    note_ranges_broken(db, table, capture_id,
                       std::to_string(want) + " rows recorded, " + std::to_string(c.found) +
                           " found there: rowids changed, as a VACUUM may do, or rows were "
                           "deleted other than by fleetscope");
  else if (check.column_int(3) > 0)
    note_ranges_broken(db, table, capture_id,
                       "the table's last row lies in no range: rows were added other than by "
                       "fleetscope's writer");
  else
    c.hold = true;
  return c;
}

FileVersion file_version(const Database& db) {
  FileVersion v;
  auto s = db.prepare("PRAGMA data_version");
  if (s.step()) v.data_version = s.column_int(0);
  v.own_changes = sqlite3_total_changes64(db.raw());
  v.execs = db.memo().execs.load();
  return v;
}

// check_ranges, once per table and capture while the file is unchanged (FileVersion): a read
// asks before each query, a capture's load makes some twenty queries, and each check is a pass
// over the capture's rows. Inside a ReadSnapshot the file stays unchanged for the whole load
// while other connections commit (the daemon's host database under streaming agents).
RangesCheck checked_ranges(const Database& db, const std::string& table, int64_t capture_id) {
  ConnectionMemo& memo = db.memo();
  // Read before the check: while it is unchanged afterwards, the check saw this very file.
  const FileVersion now = file_version(db);
  {
    std::lock_guard lock(memo.mutex);
    if (memo.version != now) {
      memo.ranges.clear();
      memo.version = now;
    } else if (auto it = memo.ranges.find({table, capture_id}); it != memo.ranges.end()) {
      return it->second;
    }
  }
  const RangesCheck c = check_ranges(db, table, capture_id);
  std::lock_guard lock(memo.mutex);
  if (memo.version == now) memo.ranges[{table, capture_id}] = c;
  return c;
}

}  // namespace

uint64_t capture_range_checks_made() {
  return g_range_checks.load();
}

bool capture_row_ranges_hold(const Database& db, const std::string& table, int64_t capture_id) {
  return checked_ranges(db, table, capture_id).hold;
}

std::string capture_rows_sql(const Database& db, const std::string& table, int64_t capture_id,
                             int param, CaptureRowsUse use, const std::string& alias) {
  const std::string name = alias.empty() ? table : alias;
  const std::string p = "?" + std::to_string(param);
  if (!has_row_ranges(table)) return plain_sql(table, name, p);
  if (use == CaptureRowsUse::by_time && has_capture_time_index(db, table))
    return plain_sql(table, name, p);
  if (!capture_row_ranges_hold(db, table, capture_id)) return plain_sql(table, name, p);
  return ranges_sql(table, name, p);
}

void recompute_capture_row_ranges(Database& db, const std::string& table) {
  bool known = false;
  for_each_event_table([&]<class Row>() {
    if constexpr (io::TableIo<Row>::row_ranges) {
      if (table != io::TableIo<Row>::table) return;
      db.exec(io::TableIo<Row>::fill_ranges_sql);
      known = true;
    }
  });
  if (!known) throw Error("recompute_capture_row_ranges: " + table + " has no row ranges");
}

bool capture_has_rows(const Database& db, int64_t capture_id) {
  bool found = false;
  for_each_event_table([&]<class Row>() {
    if constexpr (!std::is_same_v<Row, DeviceSample>) {
      if (found) return;
      // EXISTS stops at the first row.
      auto stmt = db.prepare("SELECT EXISTS (SELECT 1" +
                             capture_rows_sql(db, io::TableIo<Row>::table, capture_id) + ")");
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
                  requires { io::TableIo<Row>::last_time_expr; }) {
      auto stmt = db.prepare(std::string("SELECT max(") + io::TableIo<Row>::last_time_expr + ")" +
                             capture_rows_sql(db, io::TableIo<Row>::table, capture_id));
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
  // The capture's rows found in its ranges (counted, not read). Iterations are counted on their
  // key.
  for_each_event_table([&]<class Row>() {
    if constexpr (!std::is_same_v<Row, DeviceSample>) {
      const std::string table = io::TableIo<Row>::table;
      if constexpr (io::TableIo<Row>::row_ranges) {
        // The rows found in the capture's ranges, as the check before a read counts them (by
        // the captureId filter where the ranges do not hold).
        const RangesCheck ranges = checked_ranges(db, table, capture_id);
        if (ranges.hold)
          key += table + "=" + std::to_string(ranges.found) + ";";
        else
          add(io::TableIo<Row>::table, "SELECT count(*) FROM " + table + " WHERE captureId = ?1");
      } else
        add(io::TableIo<Row>::table,
            "SELECT count(*), total(start), total(end) FROM " + table + " WHERE captureId = ?1");
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
    const std::string table = io::TableIo<Row>::table;
    auto stmt = db.prepare("DELETE FROM " + table + " WHERE rowid IN (SELECT " + table + ".rowid" +
                           capture_rows_sql(db, table, capture_id) + ")");
    stmt.bind(1, capture_id).execute();
  });
  db.prepare("DELETE FROM capture_row_ranges WHERE captureId = ?1").bind(1, capture_id).execute();
}

void shift_capture_rows(Database& db, int64_t capture_id, int64_t delta_ns) {
  for_each_event_table([&]<class Row>() {
    if constexpr (requires { io::TableIo<Row>::shift_set; }) {
      const std::string table = io::TableIo<Row>::table;
      auto stmt = db.prepare("UPDATE " + table + " SET " + io::TableIo<Row>::shift_set +
                             " WHERE rowid IN (SELECT " + table + ".rowid" +
                             capture_rows_sql(db, table, capture_id, 2) + ")");
      stmt.bind(1, delta_ns).bind(2, capture_id).execute();
    }
  });
}

}  // namespace fleetscope::store
