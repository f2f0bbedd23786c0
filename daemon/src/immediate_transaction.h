// BEGIN IMMEDIATE ... COMMIT on one of HostStore's connections (the maintenance connection, a
// retention run's), rolled back when an exception leaves the scope first.
#pragma once

#include "fleetscope/store/database.h"

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

}  // namespace fleetscope::daemon
