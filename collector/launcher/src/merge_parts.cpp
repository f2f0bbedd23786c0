#include "fleetscope/launcher/merge_parts.h"

#include <map>
#include <string>
#include <vector>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_cache.h"

namespace fleetscope::launcher {
MergeResult merge_parts(const std::vector<std::string>& parts, const std::string& output) {
  MergeResult result;
  store::AtomicOutput atomic(output);
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
      std::map<int64_t, int64_t> capture_map;  // part's capture id -> merged capture id
      for (store::Capture capture : reader.captures()) {
        int64_t old_id = capture.id;
        int64_t id = writer.add_capture(capture);
        capture_map[old_id] = id;
        ++result.captures;
        for (store::GpuInfo gpu : reader.gpus(old_id)) {
          gpu.captureId = id;
          writer.add_gpu(gpu);
        }
        // Every event table, as the table descriptions list them (FLEETSCOPE_EVENT_ROWS): rows
        // read back carry name ids; their strings are resolved for the new file's writer.
        auto copy = [&]<class Row>(std::vector<Row> rows) {
          for (Row& row : rows) {
            store::resolve_strings(row, reader);
            row.captureId = id;
            writer.add(std::move(row));
          }
          return static_cast<long long>(rows.size());
        };
        std::map<std::string, long long> copied;  // rows by table (the struct's plural)
#define FLEETSCOPE_COPY_ROWS(Row, plural) \
  copied[#plural] = copy(reader.rows_of<store::Row>(old_id));
        FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_COPY_ROWS)
#undef FLEETSCOPE_COPY_ROWS
        result.kernels += copied["kernels"];
        result.memcpys += copied["memcpys"];
        result.memsets += copied["memsets"];
      }
      for (store::Process process : reader.processes()) {
        if (process.host_id) process.host_id = host_map[*process.host_id];
        if (process.captureId) process.captureId = capture_map[*process.captureId];
        writer.upsert_process(process);
      }
    }
    writer.finish();
  }
  atomic.commit();
  // The timeline's zoom levels of the run's capture, built once now that the database is in
  // place, so the GUI's first open paints from them (timeline/).
  timeline::write_capture_summaries(output);
  return result;
}

}  // namespace fleetscope::launcher
