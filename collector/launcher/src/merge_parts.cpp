#include "fleetscope/launcher/merge_parts.h"

#include <map>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::launcher {
namespace {

// The agent keeps CUPTI external correlations in a table of its own (not in trace.sql yet).
constexpr const char* kExternalTable = "agent_external_correlation";

struct ExternalRow {
  int64_t captureId, correlationId, externalKind, externalId;
};

bool has_table(const store::Database& db, const std::string& name) {
  store::Statement s =
      db.prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
  s.bind(1, name);
  return s.step() && s.column_int(0) > 0;
}

std::vector<ExternalRow> read_external(const store::Database& db) {
  std::vector<ExternalRow> rows;
  if (!has_table(db, kExternalTable)) return rows;
  store::Statement s = db.prepare(std::string("SELECT captureId, correlationId, externalKind, "
                                              "externalId FROM ") +
                                  kExternalTable);
  while (s.step())
    rows.push_back({s.column_int(0), s.column_int(1), s.column_int(2), s.column_int(3)});
  return rows;
}

void write_external(store::Database& db, const std::vector<ExternalRow>& rows) {
  db.exec(std::string("CREATE TABLE IF NOT EXISTS ") + kExternalTable +
          " (captureId INTEGER NOT NULL, correlationId INTEGER NOT NULL,"
          " externalKind INTEGER NOT NULL, externalId INTEGER NOT NULL)");
  db.exec("BEGIN");
  store::Statement insert =
      db.prepare(std::string("INSERT INTO ") + kExternalTable + " VALUES (?, ?, ?, ?)");
  for (const ExternalRow& r : rows) {
    insert.bind(1, r.captureId)
        .bind(2, r.correlationId)
        .bind(3, r.externalKind)
        .bind(4, r.externalId);
    insert.execute();
  }
  db.exec("COMMIT");
}

}  // namespace

MergeResult merge_parts(const std::vector<std::string>& parts, const std::string& output) {
  MergeResult result;
  store::AtomicOutput atomic(output);
  std::vector<ExternalRow> external;
  {
    store::WriterOptions options;
    options.writer_name = "fleetscope-run";
    options.temporary_output = true;  // AtomicOutput syncs once at commit
    store::Writer writer(store::Database::create(atomic.temp_path()), options);
    std::map<std::string, int64_t> host_ids;  // by hostname: all parts usually share one host
    for (const std::string& part : parts) {
      store::Reader reader(part);
      std::map<int64_t, int64_t> host_map;
      for (const store::Host& host : reader.hosts()) {
        auto [it, inserted] = host_ids.try_emplace(host.hostname, 0);
        if (inserted) it->second = writer.add_host(host);
        host_map[host.id] = it->second;
      }
      for (store::Process process : reader.processes()) {
        if (process.host_id) process.host_id = host_map[*process.host_id];
        writer.upsert_process(process);
      }
      for (store::Capture capture : reader.captures()) {
        int64_t old_id = capture.id;
        int64_t id = writer.add_capture(capture);
        ++result.captures;
        store::EventFilter filter;
        filter.captureId = old_id;
        for (store::GpuInfo gpu : reader.gpus(old_id)) {
          gpu.captureId = id;
          writer.add_gpu(gpu);
        }
        for (store::Kernel k : reader.kernels(filter)) {
          k.demangledName = reader.string(k.demangledNameId);
          k.shortName = reader.string(k.shortNameId);
          k.captureId = id;
          writer.add(std::move(k));
          ++result.kernels;
        }
        for (store::Memcpy m : reader.memcpys(filter)) {
          m.captureId = id;
          writer.add(std::move(m));
          ++result.memcpys;
        }
        for (store::Memset m : reader.memsets(filter)) {
          m.captureId = id;
          writer.add(std::move(m));
          ++result.memsets;
        }
        for (store::RuntimeCall c : reader.runtime_calls(filter)) {
          c.name = reader.string(c.nameId);
          c.captureId = id;
          writer.add(std::move(c));
        }
        for (store::Sync s : reader.syncs(filter)) {
          s.captureId = id;
          writer.add(std::move(s));
        }
        for (store::NvtxEvent e : reader.nvtx_events(filter)) {
          e.captureId = id;
          writer.add(std::move(e));
        }
        for (store::Iteration it : reader.iterations(old_id)) {
          it.captureId = id;
          writer.add(std::move(it));
        }
        for (store::MemoryEvent m : reader.memory_events(filter)) {
          m.captureId = id;
          writer.add(std::move(m));
        }
        for (ExternalRow row : read_external(reader.database())) {
          if (row.captureId != old_id) continue;
          row.captureId = id;
          external.push_back(row);
        }
      }
    }
    writer.finish();
  }
  if (!external.empty()) {
    store::Database db = store::Database::open(atomic.temp_path(), store::OpenMode::read_write);
    write_external(db, external);
    db.close();
  }
  atomic.commit();
  return result;
}

}  // namespace fleetscope::launcher
