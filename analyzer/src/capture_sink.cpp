#include "fleetscope/analyzer/capture_sink.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fleetscope/common/file_errors.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/unreadable_file.h"
#include "gpu_rows.h"

namespace fleetscope::analyzer {

namespace {

// A row of SyncWait (load_sync_waits' WHERE).
bool is_sync_wait(const store::Sync& y) {
  if (!y.correlationId) return false;
  if (y.syncType == store::kSyncEvent || y.syncType == store::kSyncStreamWaitEvent)
    return y.eventRecordCorrelationId.has_value();
  return y.syncType == store::kSyncContext && !y.streamId;
}

void report(const LoadProgress& progress, const std::string& stage, int64_t rows) {
  if (progress) progress(stage, rows);
}

// SQLite's `name LIKE 'enumerate(DataLoader)%'`: a prefix match, case-insensitive for ASCII
// letters only (the loader's DataLoader op filter).
bool like_dataloader_prefix(const std::string& name) {
  static constexpr char kPrefix[] = "enumerate(dataloader)";
  constexpr size_t n = sizeof kPrefix - 1;
  if (name.size() < n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
    if (c != static_cast<unsigned char>(kPrefix[i])) return false;
  }
  return true;
}

// The columns a GPU activity row (kernel, memcpy, memset) shares, as the loader reads them.
template <class Row>
GpuRow gpu_row(const Row& r, int64_t name_id) {
  return {r.start,
          r.end,
          r.deviceId,
          r.streamId,
          r.correlationId.value_or(-1),
          r.globalPid.value_or(-1),
          name_id};
}

// A REAL column keeps the value, except that SQLite stores an integral REAL as an integer and
// reads it back as a REAL: -0.0 comes back as 0.0.
double as_stored_real(double v) {
  return v == 0.0 ? 0.0 : v;
}

}  // namespace

struct CaptureSink::Impl {
  explicit Impl(size_t rows_per_batch) : batch_rows(std::max<size_t>(1, rows_per_batch)) {}

  size_t batch_rows;

  // StringIds: ids 1, 2, ... in the order the Writer's background thread interns them.
  std::unordered_map<std::string, int64_t> string_ids;
  std::vector<std::string> strings;                          // strings[id - 1]
  std::unordered_map<std::string, int64_t> kernel_name_ids;  // demangledName (no shortName) -> id

  // The Writer's current batch: rows whose strings are interned when the batch is written.
  std::vector<store::Kernel> pending_kernels;
  std::vector<store::RuntimeCall> pending_runtime;
  std::vector<std::string> pending_nvtx_texts;
  std::vector<store::CpuOp> pending_cpu_ops;
  std::vector<std::string> pending_metrics;
  size_t pending_rows = 0;

  // Synchronous tables.
  std::vector<store::Capture> captures;  // id = index + 1
  int64_t hosts = 0;
  std::vector<store::Workflow> workflows;                                          // id = index + 1
  std::map<std::pair<std::optional<int64_t>, int64_t>, store::Process> processes;  // by key
  std::map<std::pair<int64_t, int32_t>, store::GpuInfo> gpu_info;  // by (captureId, id)

  // Loaded event rows, in row order. Kernels, runtime calls and host ops go into `data` as their
  // batch is written; memcpys, memsets and syncs wait for take() (their labels are interned
  // there, after every store string, as the loader does).
  CaptureData data;
  std::unordered_map<int64_t, WorkClass> class_by_name;
  std::vector<store::Memcpy> memcpys;
  std::vector<store::Memset> memsets;
  std::vector<store::Sync> syncs;  // with a stream only
  std::vector<store::Iteration> iterations;
  std::vector<store::MemoryEvent> memory;

  // The capture every loaded row belongs to (see the header's limitation).
  std::optional<int64_t> rows_capture;
  bool mixed_captures = false;

  void note_capture(int64_t capture_id) {
    if (!rows_capture)
      rows_capture = capture_id;
    else if (*rows_capture != capture_id)
      mixed_captures = true;
  }

  int64_t intern(const std::string& text) {
    auto [it, inserted] = string_ids.try_emplace(text, static_cast<int64_t>(strings.size()) + 1);
    if (inserted) strings.push_back(text);
    return it->second;
  }

  // Writer::Impl::kernel_names_for: the demangled name's id (the short name is interned too).
  int64_t kernel_name_id(const store::Kernel& k) {
    if (k.shortName.empty()) {
      auto it = kernel_name_ids.find(k.demangledName);
      if (it != kernel_name_ids.end()) return it->second;
      int64_t id = intern(k.demangledName);
      intern(store::short_kernel_name(k.demangledName));
      kernel_name_ids.emplace(k.demangledName, id);
      return id;
    }
    int64_t id = intern(k.demangledName);
    intern(k.shortName);
    return id;
  }

  void row_added() {
    if (++pending_rows >= batch_rows) write_batch();
  }

  // What Writer::Impl::write_rows does with one batch, in its table order: kernels, runtime
  // calls, NVTX texts, cpu_ops, device-sample metrics intern their strings.
  void write_batch() {
    if (pending_rows == 0) return;
    auto& g = data.gpu;
    const store::Kernel* previous = nullptr;
    int64_t name_id = 0;
    for (const store::Kernel& k : pending_kernels) {
      if (!previous || previous->demangledName != k.demangledName ||
          previous->shortName != k.shortName)
        name_id = kernel_name_id(k);
      previous = &k;
      auto cls = class_by_name.find(name_id);
      if (cls == class_by_name.end())
        cls =
            class_by_name.emplace(name_id, classify_gpu_work(GpuEventKind::kernel, k.demangledName))
                .first;
      push_kernel(g, gpu_row(k, name_id), cls->second, grid_block_count(k.gridX, k.gridY, k.gridZ),
                  k.estOccupancy && !std::isnan(*k.estOccupancy) ? as_stored_real(*k.estOccupancy)
                                                                 : std::nan(""));
    }
    auto& r = data.runtime;
    for (const store::RuntimeCall& call : pending_runtime) {
      r.start.push_back(call.start);
      r.end.push_back(call.end);
      r.correlation.push_back(call.correlationId.value_or(-1));
      r.name_id.push_back(intern(call.name));
      r.global_tid.push_back(call.globalTid);
    }
    for (const std::string& text : pending_nvtx_texts) intern(text);
    for (const store::CpuOp& op : pending_cpu_ops) {
      const int64_t id = intern(op.name);
      if (like_dataloader_prefix(op.name))
        data.dataloader_ops.push_back({op.start, op.end, id, op.globalTid});
      if (op.category != "gpu_user_annotation")
        data.cpu_ops.push_back({op.start, op.end, id, op.globalTid, op.category == "cpu_op"});
      else
        data.gpu_annotations.push_back({op.start, op.end, id, op.globalTid, false});
    }
    for (const std::string& metric : pending_metrics) intern(metric);
    pending_kernels.clear();
    pending_runtime.clear();
    pending_nvtx_texts.clear();
    pending_cpu_ops.clear();
    pending_metrics.clear();
    pending_rows = 0;
  }

  // Writer's synchronous calls flush the queued rows first.
  void flush() { write_batch(); }

  CaptureData take(int64_t capture_id, const LoadProgress& progress);
};

CaptureData CaptureSink::Impl::take(int64_t capture_id, const LoadProgress& progress) {
  flush();
  if (capture_id < 1 || capture_id > static_cast<int64_t>(captures.size()))
    throw InputError("(direct import)", "table captures",
                     "no capture with id " + std::to_string(capture_id));
  if (mixed_captures) throw std::logic_error("CaptureSink: rows of several captures in one sink");
  CaptureData out = std::move(data);
  data = CaptureData{};
  if (rows_capture && *rows_capture != capture_id) {
    // Every loaded row belongs to another capture: this one has none.
    out.gpu = GpuEvents{};
    out.runtime = RuntimeCalls{};
    out.cpu_ops.clear(), out.dataloader_ops.clear();
    memcpys.clear(), memsets.clear(), syncs.clear(), iterations.clear(), memory.clear();
  }

  out.capture = captures[static_cast<size_t>(capture_id - 1)];
  out.names.reserve(strings.size());
  for (size_t i = 0; i < strings.size(); ++i)
    out.names.emplace(static_cast<int64_t>(i) + 1, std::move(strings[i]));
  strings.clear();
  string_ids.clear();
  for (auto& [key, gpu] : gpu_info)
    if (key.first == capture_id) out.gpus.push_back(std::move(gpu));
  std::vector<store::Process> all;
  for (auto& [key, process] : processes) all.push_back(std::move(process));
  out.processes = store::processes_of(all, capture_id);
  out.workflows = std::move(workflows);
  // store::Reader::iterations / memory_events: by start / ts, ties in row order.
  std::stable_sort(iterations.begin(), iterations.end(),
                   [](const auto& a, const auto& b) { return a.start < b.start; });
  out.iterations = std::move(iterations);
  std::stable_sort(memory.begin(), memory.end(),
                   [](const auto& a, const auto& b) { return a.ts < b.ts; });
  out.memory = std::move(memory);

  report(progress, "kernels", static_cast<int64_t>(out.gpu.size()));
  auto& g = out.gpu;
  const size_t gpu_rows = g.size() + memcpys.size() + memsets.size();
  g.reserve(gpu_rows);
  // One label per (copy kind, source kind, destination kind), interned at its first row.
  std::map<std::tuple<int32_t, std::optional<int32_t>, std::optional<int32_t>>, int64_t>
      memcpy_names;
  for (const store::Memcpy& m : memcpys) {
    auto name = memcpy_names.find({m.copyKind, m.srcKind, m.dstKind});
    if (name == memcpy_names.end())
      name = memcpy_names
                 .emplace(std::make_tuple(m.copyKind, m.srcKind, m.dstKind),
                          out.intern(memcpy_label(m.copyKind, m.srcKind, m.dstKind)))
                 .first;
    push_memcpy(g, gpu_row(m, name->second), m.bytes, m.copyKind, m.srcKind, m.dstKind);
  }
  memcpys.clear();
  const int64_t memset_name = out.intern("Memset (Device)");
  for (const store::Memset& m : memsets)
    push_memset(g, gpu_row(m, memset_name), m.bytes, m.memKind);
  memsets.clear();
  report(progress, "gpu events", static_cast<int64_t>(g.size()));

  // load_gpu_syncs: a sync without a device goes to the capture's only GPU.
  std::optional<int32_t> only_device;
  if (!g.device.empty() && std::all_of(g.device.begin(), g.device.end(),
                                       [&](int32_t d) { return d == g.device.front(); }))
    only_device = g.device.front();
  auto& s = out.gpu_syncs;
  for (const store::Sync& y : syncs) {
    std::optional<int32_t> device = y.deviceId ? y.deviceId : only_device;
    if (is_sync_wait(y)) {  // load_sync_waits
      SyncWait w;
      w.kind = y.syncType == store::kSyncContext           ? SyncWait::Kind::context_sync
               : y.syncType == store::kSyncStreamWaitEvent ? SyncWait::Kind::stream_wait_event
                                                           : SyncWait::Kind::event_sync;
      w.start = y.start;
      w.end = y.end;
      w.device = device.value_or(-1);
      w.stream = y.streamId.value_or(-1);
      w.correlation = *y.correlationId;
      w.record_correlation = y.eventRecordCorrelationId.value_or(-1);
      w.record_stream = y.eventRecordStreamId.value_or(-1);
      out.sync_waits.push_back(w);
    }
    if (!device || !y.streamId) continue;
    const std::string name = sync_label(y.syncType);
    s.start.push_back(y.start);
    s.end.push_back(y.end);
    s.device.push_back(*device);
    s.stream.push_back(*y.streamId);
    s.name_id.push_back(out.intern(name));
    s.work_class.push_back(classify_gpu_work(GpuEventKind::kernel, name));
    s.correlation.push_back(y.correlationId.value_or(-1));
  }
  syncs.clear();
  report(progress, "runtime calls", static_cast<int64_t>(out.runtime.size()));
  out.finalize();
  report(progress, "indexed", static_cast<int64_t>(out.gpu.size() + out.runtime.size()));
  return out;
}

CaptureSink::CaptureSink(size_t batch_rows) : impl_(std::make_unique<Impl>(batch_rows)) {}
CaptureSink::~CaptureSink() = default;

int64_t CaptureSink::add_capture(const store::Capture& capture) {
  impl_->flush();
  store::Capture c = capture;
  c.id = static_cast<int64_t>(impl_->captures.size()) + 1;
  impl_->captures.push_back(std::move(c));
  return impl_->captures.back().id;
}

void CaptureSink::update_capture(const store::Capture& capture) {
  impl_->flush();
  if (capture.id >= 1 && capture.id <= static_cast<int64_t>(impl_->captures.size()))
    impl_->captures[static_cast<size_t>(capture.id - 1)] = capture;
}

int64_t CaptureSink::add_host(const store::Host&) {
  impl_->flush();
  return ++impl_->hosts;
}

int64_t CaptureSink::add_workflow(const store::Workflow& workflow) {
  impl_->flush();
  store::Workflow w = workflow;
  w.id = static_cast<int64_t>(impl_->workflows.size()) + 1;
  impl_->workflows.push_back(std::move(w));
  return impl_->workflows.back().id;
}

void CaptureSink::upsert_process(const store::Process& process) {
  impl_->flush();
  impl_->processes.insert_or_assign({process.captureId, process.globalPid}, process);
}

void CaptureSink::add_gpu(const store::GpuInfo& gpu) {
  impl_->flush();
  impl_->gpu_info.insert_or_assign({gpu.captureId, gpu.id}, gpu);
}

void CaptureSink::add(store::Kernel row) {
  impl_->note_capture(row.captureId);
  impl_->pending_kernels.push_back(std::move(row));
  impl_->row_added();
}

void CaptureSink::add(store::Memcpy row) {
  impl_->note_capture(row.captureId);
  impl_->memcpys.push_back(row);
  impl_->row_added();
}

void CaptureSink::add(store::Memset row) {
  impl_->note_capture(row.captureId);
  impl_->memsets.push_back(row);
  impl_->row_added();
}

void CaptureSink::add(store::RuntimeCall row) {
  impl_->note_capture(row.captureId);
  impl_->pending_runtime.push_back(std::move(row));
  impl_->row_added();
}

void CaptureSink::add(store::Sync row) {
  impl_->note_capture(row.captureId);
  // load_gpu_syncs: streamId IS NOT NULL; load_sync_waits
  if (row.streamId || is_sync_wait(row)) impl_->syncs.push_back(row);
  impl_->row_added();
}

void CaptureSink::add(store::NvtxEvent row) {
  impl_->pending_nvtx_texts.push_back(std::move(row.text));
  impl_->row_added();
}

void CaptureSink::add(store::CpuOp row) {
  impl_->note_capture(row.captureId);
  impl_->pending_cpu_ops.push_back(std::move(row));
  impl_->row_added();
}

void CaptureSink::add(store::Iteration row) {
  impl_->note_capture(row.captureId);
  // INSERT OR REPLACE on the key (captureId, globalPid, step); NULL globalPids never conflict.
  auto& all = impl_->iterations;
  if (row.globalPid) {
    auto same = std::find_if(all.begin(), all.end(), [&](const store::Iteration& x) {
      return x.captureId == row.captureId && x.globalPid == row.globalPid && x.step == row.step;
    });
    if (same != all.end()) all.erase(same);
  }
  all.push_back(std::move(row));
  impl_->row_added();
}

void CaptureSink::add(store::MemoryEvent row) {
  impl_->note_capture(row.captureId);
  impl_->memory.push_back(row);
  impl_->row_added();
}

void CaptureSink::add(store::DeviceSample row) {
  impl_->pending_metrics.push_back(std::move(row.metric));
  impl_->row_added();
}

void CaptureSink::add(store::ExternalCorrelation) {
  impl_->row_added();
}

void CaptureSink::shift_times(int64_t capture_id, int64_t delta) {
  Impl& m = *impl_;
  if (delta == 0) return;
  m.flush();  // Writer::shift_times flushes first: the same batch boundaries, the same string ids
  if (!m.rows_capture || *m.rows_capture != capture_id || m.mixed_captures) return;
  auto add = [delta](int64_t& t) { t += delta; };
  auto add_all = [&](std::vector<int64_t>& v) {
    for (int64_t& t : v) add(t);
  };
  add_all(m.data.gpu.start), add_all(m.data.gpu.end);
  add_all(m.data.runtime.start), add_all(m.data.runtime.end);
  for (auto& h : m.data.cpu_ops) add(h.start), add(h.end);
  for (auto& h : m.data.dataloader_ops) add(h.start), add(h.end);
  for (auto& x : m.memcpys) add(x.start), add(x.end);
  for (auto& x : m.memsets) add(x.start), add(x.end);
  for (auto& x : m.syncs) add(x.start), add(x.end);
  for (auto& x : m.iterations) add(x.start), add(x.end);
  for (auto& x : m.memory) add(x.ts);
}

CaptureData CaptureSink::take(int64_t capture_id, const LoadProgress& progress) {
  return impl_->take(capture_id, progress);
}

CaptureData load_trace_file(const std::string& path, const LoadProgress& progress,
                            const ImportProgressFn& import_progress) {
  if (importers::detect_format(path) == importers::Format::unknown)
    throw unreadable_file(path, "not a trace file (it holds " + common::describe_file_start(path) +
                                    "); expected Kineto JSON, .json.gz or an nsys SQLite export");
  CaptureSink sink;
  importers::ImportOptions options;
  if (import_progress) {
    options.progress_every_events = 20000;
    options.progress = [&](const importers::ImportProgress& p) {
      import_progress(p.bytes_done, p.bytes_total, p.events);
    };
  }
  const importers::ImportResult result = importers::import_file(path, sink, options);
  return sink.take(result.capture_id, progress);
}

}  // namespace fleetscope::analyzer
