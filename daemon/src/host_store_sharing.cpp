// HostStore's rows for the sharing service: lane_plans and sharing_events, their columns as
// schema/tables.py describes them (store::LanePlan, store::SharingEvent and their generated
// insert and read code, store/table_io.h), on the maintenance connection, each call one
// transaction.
#include <sqlite3.h>

#include <algorithm>

#include "fleetscope/daemon/host_store.h"
#include "fleetscope/store/table_io.h"
#include "immediate_transaction.h"

namespace fleetscope::daemon {

int64_t HostStore::add_lane_plan(int64_t created_ns, const std::string& policy,
                                 const std::string& plan_json) {
  store::LanePlan plan;
  plan.created_ns = created_ns;
  plan.policy = policy;
  plan.plan_json = plan_json;
  plan.applied = true;
  auto m = maintenance();
  ImmediateTransaction transaction(m.db);
  auto s = m.db.prepare(store::io::insert_sql<store::LanePlan>());
  store::io::bind_row(s, plan);
  s.execute();
  const int64_t id = sqlite3_last_insert_rowid(m.db.raw());
  transaction.commit();
  return id;
}

void HostStore::add_sharing_events(const std::vector<SharingEventRow>& rows) {
  if (rows.empty()) return;
  auto m = maintenance();
  insert_rows(m.db, rows);
}

std::vector<HostStore::LanePlanRow> HostStore::lane_plans(int limit) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(store::io::select_sql<store::LanePlan>() + " ORDER BY id DESC LIMIT ?");
  s.bind(1, static_cast<int64_t>(limit));
  return store::io::read_rows<store::LanePlan>(s);
}

std::vector<HostStore::SharingEventRow> HostStore::sharing_events(int limit) {
  store::Database db = store::Database::open(path_);
  auto s =
      db.prepare(store::io::select_sql<store::SharingEvent>() + " ORDER BY rowid DESC LIMIT ?");
  s.bind(1, static_cast<int64_t>(limit));
  std::vector<SharingEventRow> out = store::io::read_rows<store::SharingEvent>(s);
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<HostStore::SharingEventRow> HostStore::sharing_events_of_kinds(
    const std::vector<std::string>& kinds) {
  if (kinds.empty()) return {};
  std::string placeholders;
  for (size_t i = 0; i < kinds.size(); ++i) placeholders += i ? ",?" : "?";
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(store::io::select_sql<store::SharingEvent>() + " WHERE kind IN (" +
                      placeholders + ") ORDER BY rowid");
  for (size_t i = 0; i < kinds.size(); ++i) s.bind(static_cast<int>(i + 1), kinds[i]);
  return store::io::read_rows<store::SharingEvent>(s);
}

std::optional<HostStore::LanePlanRow> HostStore::lane_plan(int64_t id) {
  store::Database db = store::Database::open(path_);
  auto s = db.prepare(store::io::select_sql<store::LanePlan>() + " WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return store::io::TableIo<store::LanePlan>::read(s);
}

}  // namespace fleetscope::daemon
