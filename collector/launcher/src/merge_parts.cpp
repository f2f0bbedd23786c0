#include "fleetscope/launcher/merge_parts.h"

#include <map>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_cache.h"

namespace fleetscope::launcher {
namespace {}  // namespace

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
        for (store::ExternalCorrelation row : reader.external_correlations(old_id)) {
          row.captureId = id;
          writer.add(row);
        }
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
  // place, so the GUI's first open paints from them (schema/timeline).
  timeline::write_capture_summaries(output);
  return result;
}

}  // namespace fleetscope::launcher
