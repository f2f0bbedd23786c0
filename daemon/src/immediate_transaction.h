// BEGIN IMMEDIATE ... COMMIT on one of HostStore's connections (the maintenance connection, a
// retention run's), rolled back when an exception leaves the scope first.
#pragma once

#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/table_io.h"

namespace fleetscope::daemon {

class ImmediateTransaction {
 public:
  explicit ImmediateTransaction(store::Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~ImmediateTransaction() {
    if (!committed_) try {
        db_.exec("ROLLBACK");
      } catch (...) {
      }
  }
  ImmediateTransaction(const ImmediateTransaction&) = delete;
  ImmediateTransaction& operator=(const ImmediateTransaction&) = delete;
  void commit() {
    db_.exec("COMMIT");
    committed_ = true;
  }

 private:
  store::Database& db_;
  bool committed_ = false;
};

// Inserts `rows` into their table through the generated code (store::io, table_io.h) in one
// transaction of their own on `db`.
template <class Row>
void insert_rows(store::Database& db, const std::vector<Row>& rows) {
  ImmediateTransaction transaction(db);
  {
    auto s = db.prepare(store::io::insert_sql<Row>());
    for (const auto& row : rows) {
      store::io::bind_row(s, row);
      s.execute();
    }
  }
  transaction.commit();
}

}  // namespace fleetscope::daemon
