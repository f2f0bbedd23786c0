// HostStore's rows for the sharing service: lane_plans and sharing_events (schema/tables.py),
// on the maintenance connection, each call one transaction.
#include <sqlite3.h>

#include <algorithm>

#include "fleetscope/daemon/host_store.h"

namespace fleetscope::daemon {
namespace {

// BEGIN IMMEDIATE ... COMMIT; rolled back when an exception leaves the scope first.
class Immediate {
 public:
  explicit Immediate(store::Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~Immediate() {
    if (!done_) try {
        db_.exec("ROLLBACK");
      } catch (...) {
      }
  }
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  store::Database& db_;
  bool done_ = false;
};

}  // namespace

int64_t HostStore::add_lane_plan(int64_t created_ns, const std::string& policy,
                                 const std::string& plan_json) {
  std::lock_guard lock(mutex_);
  Immediate transaction(*maintenance_);
  maintenance_
      ->prepare("INSERT INTO lane_plans(created_ns, policy, plan, applied) VALUES (?,?,?,1)")
      .bind(1, created_ns)
      .bind(2, policy)
      .bind(3, plan_json)
      .execute();
  const int64_t id = sqlite3_last_insert_rowid(maintenance_->raw());
  transaction.commit();
  return id;
}

void HostStore::add_sharing_events(const std::vector<SharingEventRow>& rows) {
  if (rows.empty()) return;
  std::lock_guard lock(mutex_);
  Immediate transaction(*maintenance_);
  {
    auto s = maintenance_->prepare(
        "INSERT INTO sharing_events(ts, plan_id, kind, detail) VALUES (?,?,?,?)");
    for (const auto& row : rows) {
      s.bind(1, row.ts_ns)
          .bind(2, row.plan_id)
          .bind(3, row.kind)
          .bind(4, row.detail_json)
          .execute();
    }
  }
  transaction.commit();
}

std::vector<HostStore::LanePlanRow> HostStore::lane_plans(int limit) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(
      "SELECT id, created_ns, policy, plan, applied FROM lane_plans ORDER BY id DESC LIMIT ?");
  s.bind(1, static_cast<int64_t>(limit));
  std::vector<LanePlanRow> out;
  while (s.step())
    out.push_back({s.column_int(0), s.column_int(1), s.column_text(2), s.column_text(3),
                   s.column_int(4) != 0});
  return out;
}

std::vector<HostStore::SharingEventRow> HostStore::sharing_events(int limit) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(
      "SELECT ts, plan_id, kind, detail FROM sharing_events ORDER BY rowid DESC LIMIT ?");
  s.bind(1, static_cast<int64_t>(limit));
  std::vector<SharingEventRow> out;
  while (s.step()) {
    SharingEventRow row;
    row.ts_ns = s.column_int(0);
    if (!s.column_is_null(1)) row.plan_id = s.column_int(1);
    row.kind = s.column_text(2);
    row.detail_json = s.column_text(3);
    out.push_back(std::move(row));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<HostStore::SharingEventRow> HostStore::sharing_events_of_kinds(
    const std::vector<std::string>& kinds) {
  std::vector<SharingEventRow> out;
  if (kinds.empty()) return out;
  std::string placeholders;
  for (size_t i = 0; i < kinds.size(); ++i) placeholders += i ? ",?" : "?";
  store::Database db = store::Database::open(path_);
  auto s = db.prepare("SELECT ts, plan_id, kind, detail FROM sharing_events WHERE kind IN (" +
                      placeholders + ") ORDER BY rowid");
  for (size_t i = 0; i < kinds.size(); ++i) s.bind(static_cast<int>(i + 1), kinds[i]);
  while (s.step()) {
    SharingEventRow row;
    row.ts_ns = s.column_int(0);
    if (!s.column_is_null(1)) row.plan_id = s.column_int(1);
    row.kind = s.column_text(2);
    row.detail_json = s.column_text(3);
    out.push_back(std::move(row));
  }
  return out;
}

std::optional<HostStore::LanePlanRow> HostStore::lane_plan(int64_t id) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare("SELECT id, created_ns, policy, plan, applied FROM lane_plans WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return LanePlanRow{s.column_int(0), s.column_int(1), s.column_text(2), s.column_text(3),
                     s.column_int(4) != 0};
}

}  // namespace fleetscope::daemon
