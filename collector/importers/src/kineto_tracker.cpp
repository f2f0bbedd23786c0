#include "kineto_tracker.h"

#include <algorithm>

#include "kineto_parser.h"

namespace fleetscope::importers::kineto {

namespace {
constexpr int64_t kSyntheticTidBase = 0xF00000;  // string tids: 0xF00000, 0xF00001, ...

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}
}  // namespace

Tracker::Tracker(store::RowSink& writer, int64_t capture_id, const TraceMeta& meta,
                 ImportResult& result)
    : writer_(writer), capture_id_(capture_id), meta_(meta), result_(result) {
  // Kineto writes about one runtime call per kilobyte of JSON (0.9-1.1 on the shared traces, up
  // to 2 on ResNet traces): sizing the correlation map for the usual case up front saves most
  // rehashes without committing memory for the densest case.
  launches_.reserve(static_cast<size_t>(std::max<int64_t>(result.input_bytes / 1024, 16)));
}

void Tracker::LaunchMap::reserve(size_t entries) {
  size_t capacity = 16;
  int bits = 4;
  while (capacity * 3 < entries * 4) capacity *= 2, ++bits;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old(capacity);
  old.swap(slots_);
  bits_ = bits;
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t i = index_of(s.key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

Tracker::Launch& Tracker::LaunchMap::operator[](int64_t correlation) {
  if (correlation == kEmpty) {
    if (!min_key_)
      min_key_ = Launch{};  // not emplace(): clang judges Launch not default-constructible inside
                            // its enclosing class
    return *min_key_;
  }
  if ((size_ + 1) * 4 > slots_.size() * 3) reserve(std::max<size_t>(16, (size_ + 1) * 2));
  const size_t mask = slots_.size() - 1;
  for (size_t i = index_of(correlation);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.key == correlation) return s.launch;
    if (s.key == kEmpty) {
      s.key = correlation;
      ++size_;
      return s.launch;
    }
  }
}

const Tracker::Launch* Tracker::LaunchMap::find(int64_t correlation) const {
  if (correlation == kEmpty) return min_key_ ? &*min_key_ : nullptr;
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = index_of(correlation);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key == correlation) return &s.launch;
    if (s.key == kEmpty) return nullptr;
  }
}

int64_t Tracker::tid_of(const RawId& tid) {
  if (!tid.present) return 0;
  if (tid.is_int) return tid.value & 0xFFFFFF;
  auto [it, inserted] = string_tids_.try_emplace(std::string(tid.text), 0);
  if (inserted) it->second = kSyntheticTidBase + static_cast<int64_t>(string_tids_.size() - 1);
  return it->second;
}

void Tracker::see(int64_t start, int64_t end) {
  start_ = std::min(start_, start);
  end_ = std::max(end_, end);
}

void Tracker::see_process(int64_t pid, int64_t start, int64_t end) {
  ProcessInfo& p = processes_[pid];
  p.first = std::min(p.first, start);
  p.last = std::max(p.last, end);
}

void Tracker::on_metadata(const RawEvent& ev) {
  if (ev.name == "process_name" && ev.pid.present && ev.pid.is_int &&
      ev.args.meta_name.kind == ArgValue::Kind::string)
    process_names_[ev.pid.value] = std::string(ev.args.meta_name.s);
}

void Tracker::add_runtime(store::RuntimeCall row, const RawEvent& ev) {
  int64_t pid = pid_of(ev.pid);
  row.globalTid = store::global_tid(pid, tid_of(ev.tid));
  row.captureId = capture_id_;
  if (row.name.rfind("hip", 0) == 0) hip_api_ = true;
  if (row.correlationId) {
    Launch& l = launches_[*row.correlationId];
    l.globalTid = row.globalTid;
    if (ev.args.size.present()) {
      const ArgValue& s = ev.args.size;
      if (s.is_number())
        l.bytes = s.as_int();
      else if (s.kind == ArgValue::Kind::string)
        l.bytes = std::strtoll(std::string(s.s).c_str(), nullptr, 10);
    }
  }
  see(row.start, row.end);
  see_process(pid, row.start, row.end);
  ++result_.runtime_calls;
  writer_.add(std::move(row));
}

void Tracker::add_cpu_op(store::CpuOp row, const RawEvent& ev) {
  int64_t pid = pid_of(ev.pid);
  row.globalTid = store::global_tid(pid, tid_of(ev.tid));
  row.captureId = capture_id_;
  see(row.start, row.end);
  if (row.category != "gpu_user_annotation") {
    see_process(pid, row.start, row.end);
    if (auto n = profiler_step(row.name)) {
      auto [it, inserted] = steps_.try_emplace({pid, *n}, Step{row.start, row.end});
      if (!inserted) {
        it->second.start = std::min(it->second.start, row.start);
        it->second.end = std::max(it->second.end, row.end);
      }
    }
  }
  ++result_.cpu_ops;
  writer_.add(std::move(row));
}

void Tracker::add_memory(store::MemoryEvent row, const RawEvent& ev) {
  int64_t pid = pid_of(ev.pid);
  row.globalPid = store::global_pid(pid);
  row.captureId = capture_id_;
  see(row.ts, row.ts);
  see_process(pid, row.ts, row.ts);
  ++result_.memory_events;
  writer_.add(std::move(row));
}

// A GPU row whose launching call was already seen goes to the writer at once; the others wait in
// `Deferred` (see the header) for their launch or for finish().
const Tracker::Launch* Tracker::launch_of(const std::optional<int64_t>& correlation) const {
  if (!correlation) return nullptr;
  return launches_.find(*correlation);
}

std::optional<int64_t> Tracker::fallback_pid() const {
  // One host process (the usual Kineto file): GPU work belongs to it.
  if (processes_.size() == 1) return store::global_pid(processes_.begin()->first);
  return std::nullopt;
}

void Tracker::resolve(store::Kernel& row, const Launch* launch) const {
  row.globalPid = launch ? store::global_pid(store::pid_of(launch->globalTid)) : fallback_pid();
}

void Tracker::resolve(store::Memcpy& row, const Launch* launch) const {
  row.globalPid = launch ? store::global_pid(store::pid_of(launch->globalTid)) : fallback_pid();
  if (launch && row.bytes == 0 && launch->bytes > 0) row.bytes = launch->bytes;
}

void Tracker::resolve(store::Memset& row, const Launch* launch) const {
  row.globalPid = launch ? store::global_pid(store::pid_of(launch->globalTid)) : fallback_pid();
}

void Tracker::resolve(store::Sync& row, const Launch* launch) const {
  row.globalPid = launch ? store::global_pid(store::pid_of(launch->globalTid)) : fallback_pid();
  if (launch) row.globalTid = launch->globalTid;
}

template <class Row>
void Tracker::defer(Deferred<Row>& rows, Row&& row) {
  if (const Launch* l = launch_of(row.correlationId)) {
    resolve(row, l);
    writer_.add(std::move(row));
    return;
  }
  if (!row.correlationId) {  // no launch can ever match it
    rows.late.push_back(std::move(row));
    return;
  }
  rows.recent.emplace_back(result_.events_seen, std::move(row));
  if (rows.recent.size() >= rows.sweep_at) sweep(rows);
}

template <class Row>
void Tracker::sweep(Deferred<Row>& rows) {
  size_t kept = 0;
  for (auto& [seen_at, row] : rows.recent) {
    if (const Launch* l = launch_of(row.correlationId)) {
      resolve(row, l);
      writer_.add(std::move(row));
    } else if (result_.events_seen - seen_at > kLaunchLookahead) {
      rows.late.push_back(std::move(row));
    } else {
      rows.recent[kept++] = {seen_at, std::move(row)};
    }
  }
  rows.recent.resize(kept);
  rows.sweep_at = std::max(kFirstSweep, 2 * kept);
}

// Every row still held: the late ones, then the recent ones (each in file order).
template <class Row>
void Tracker::flush_deferred(Deferred<Row>& rows) {
  for (auto& row : rows.late) {
    resolve(row, launch_of(row.correlationId));
    writer_.add(std::move(row));
  }
  for (auto& [seen_at, row] : rows.recent) {
    resolve(row, launch_of(row.correlationId));
    writer_.add(std::move(row));
  }
  rows = Deferred<Row>{};
}

void Tracker::add_kernel(store::Kernel row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.kernels;
  defer(kernels_, std::move(row));
}

void Tracker::add_memcpy(store::Memcpy row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.memcpys;
  defer(memcpys_, std::move(row));
}

void Tracker::add_memset(store::Memset row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.memsets;
  defer(memsets_, std::move(row));
}

void Tracker::add_sync(store::Sync row) {
  row.captureId = capture_id_;
  if (row.deviceId) devices_.insert(*row.deviceId);
  see(row.start, row.end);
  ++result_.syncs;
  defer(syncs_, std::move(row));
}

void Tracker::shift(int64_t delta) {
  auto add = [delta](int64_t& t) { t += delta; };
  if (start_ != INT64_MAX) add(start_), add(end_);
  for (auto& [pid, p] : processes_) {
    if (p.first != INT64_MAX) add(p.first);
    if (p.last != INT64_MIN) add(p.last);
  }
  for (auto& [key, step] : steps_) add(step.start), add(step.end);
  auto held = [&](auto& rows) {
    for (auto& r : rows.late) add(r.start), add(r.end);
    for (auto& [seen_at, r] : rows.recent) add(r.start), add(r.end);
  };
  held(kernels_);
  held(memcpys_);
  held(memsets_);
  held(syncs_);
}

void Tracker::finish(const std::string& workflow_name) {
  // Vendor: ROCm traces name AMD devices and call hip* APIs.
  bool amd = hip_api_;
  for (const auto& d : meta_.devices)
    if (contains(d.name, "AMD") || contains(d.name, "Radeon") || contains(d.name, "Instinct"))
      amd = true;
  const std::string vendor = mtia_ ? "mtia" : amd ? "amd" : "nvidia";

  flush_deferred(kernels_);
  flush_deferred(memcpys_);
  flush_deferred(memsets_);
  flush_deferred(syncs_);

  for (const auto& [key, step] : steps_) {
    store::Iteration it;
    it.captureId = capture_id_;
    it.globalPid = store::global_pid(key.first);
    it.step = key.second;
    it.start = step.start;
    it.end = step.end;
    it.source = "ProfilerStep";
    writer_.add(std::move(it));
  }
  result_.iterations = static_cast<int64_t>(steps_.size());

  std::optional<int64_t> host_id;
  if (!meta_.host_name.empty())
    host_id = writer_.add_host(store::Host{0, meta_.host_name, std::nullopt});
  store::Workflow wf;
  wf.name = workflow_name;
  if (!meta_.user.empty()) wf.user = meta_.user;
  int64_t workflow_id = writer_.add_workflow(wf);
  for (const auto& [pid, info] : processes_) {
    store::Process p;
    p.captureId = capture_id_;
    p.globalPid = store::global_pid(pid);
    p.pid = pid;
    p.host_id = host_id;
    p.workflow_id = workflow_id;
    p.rank = meta_.rank;
    p.world_size = meta_.world_size;
    if (auto it = process_names_.find(pid); it != process_names_.end()) p.command = it->second;
    if (info.first != INT64_MAX) p.start_ns = info.first;
    if (info.last != INT64_MIN) p.end_ns = info.last;
    writer_.upsert_process(p);
  }

  bool gpu_activity =
      result_.kernels + result_.memcpys + result_.memsets + result_.syncs + result_.runtime_calls >
      0;
  // GPUs: every deviceProperties entry, plus devices that ran work but were not described.
  std::set<int32_t> written;
  for (store::GpuInfo gpu : meta_.devices) {
    if (!written.insert(gpu.id).second) continue;
    gpu.captureId = capture_id_;
    gpu.vendor = vendor;
    writer_.add_gpu(gpu);
  }
  for (int32_t d : devices_) {
    if (!written.insert(d).second) continue;
    store::GpuInfo gpu;
    gpu.id = d;
    gpu.captureId = capture_id_;
    gpu.vendor = vendor;
    writer_.add_gpu(gpu);
  }
  result_.gpus = static_cast<int64_t>(written.size());

  if (start_ != INT64_MAX) {
    result_.start_ns = start_;
    result_.end_ns = end_;
  }
  if (gpu_activity)
    result_.gpu_vendor = vendor;
  else
    result_.note = "no GPU activity in this trace";
}

}  // namespace fleetscope::importers::kineto
