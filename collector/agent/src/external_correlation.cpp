#include "fleetscope/agent/row_sink.h"

namespace fleetscope::agent {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS agent_external_correlation ("
    " captureId INTEGER NOT NULL,"      // capture this row belongs to
    " correlationId INTEGER NOT NULL,"  // CUPTI correlation id of the runtime/driver call
    " externalKind INTEGER NOT NULL,"   // CUpti_ExternalCorrelationKind
    " externalId INTEGER NOT NULL)";    // id pushed by the framework (e.g. PyTorch op id)

}  // namespace

void write_external_correlations(store::Database& db,
                                 const std::vector<ExternalCorrelation>& rows) {
  db.exec(kCreate);
  db.exec("BEGIN");
  try {
    store::Statement insert = db.prepare(
        "INSERT INTO agent_external_correlation(captureId, correlationId, externalKind, externalId)"
        " VALUES (?, ?, ?, ?)");
    for (const ExternalCorrelation& row : rows) {
      insert.bind(1, row.captureId)
          .bind(2, row.correlationId)
          .bind(3, static_cast<int64_t>(row.externalKind))
          .bind(4, row.externalId);
      insert.execute();
    }
  } catch (...) {
    db.exec("ROLLBACK");
    throw;
  }
  db.exec("COMMIT");
}

std::vector<ExternalCorrelation> read_external_correlations(const store::Database& db) {
  std::vector<ExternalCorrelation> rows;
  store::Statement exists = db.prepare(
      "SELECT count(*) FROM sqlite_master WHERE type='table' AND "
      "name='agent_external_correlation'");
  if (!exists.step() || exists.column_int(0) == 0) return rows;
  store::Statement select = db.prepare(
      "SELECT captureId, correlationId, externalKind, externalId FROM agent_external_correlation"
      " ORDER BY rowid");
  while (select.step()) {
    rows.push_back(ExternalCorrelation{select.column_int(0), select.column_int(1),
                                       static_cast<int32_t>(select.column_int(2)),
                                       select.column_int(3)});
  }
  return rows;
}

}  // namespace fleetscope::agent
