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
    if (!min_key_) min_key_.emplace();
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

// GPU rows whose launching call was already seen go to the writer at once; the others wait
// for finish() (the launch may come later in the file), so memory holds only those.
const Tracker::Launch* Tracker::launch_of(const std::optional<int64_t>& correlation) const {
  if (!correlation) return nullptr;
  return launches_.find(*correlation);
}

void Tracker::add_kernel(store::Kernel row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.kernels;
  if (const Launch* l = launch_of(row.correlationId)) {
    row.globalPid = store::global_pid(store::pid_of(l->globalTid));
    writer_.add(std::move(row));
    return;
  }
  kernels_.push_back(std::move(row));
}

void Tracker::add_memcpy(store::Memcpy row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.memcpys;
  if (const Launch* l = launch_of(row.correlationId)) {
    row.globalPid = store::global_pid(store::pid_of(l->globalTid));
    if (row.bytes == 0 && l->bytes > 0) row.bytes = l->bytes;
    writer_.add(std::move(row));
    return;
  }
  memcpys_.push_back(std::move(row));
}

void Tracker::add_memset(store::Memset row) {
  row.captureId = capture_id_;
  devices_.insert(row.deviceId);
  see(row.start, row.end);
  ++result_.memsets;
  if (const Launch* l = launch_of(row.correlationId)) {
    row.globalPid = store::global_pid(store::pid_of(l->globalTid));
    writer_.add(std::move(row));
    return;
  }
  memsets_.push_back(std::move(row));
}

void Tracker::add_sync(store::Sync row) {
  row.captureId = capture_id_;
  if (row.deviceId) devices_.insert(*row.deviceId);
  see(row.start, row.end);
  ++result_.syncs;
  if (const Launch* l = launch_of(row.correlationId)) {
    row.globalPid = store::global_pid(store::pid_of(l->globalTid));
    row.globalTid = l->globalTid;
    writer_.add(std::move(row));
    return;
  }
  syncs_.push_back(std::move(row));
}

void Tracker::shift(int64_t delta) {
  auto add = [delta](int64_t& t) { t += delta; };
  if (start_ != INT64_MAX) add(start_), add(end_);
  for (auto& [pid, p] : processes_) {
    if (p.first != INT64_MAX) add(p.first);
    if (p.last != INT64_MIN) add(p.last);
  }
  for (auto& [key, step] : steps_) add(step.start), add(step.end);
  for (auto& k : kernels_) add(k.start), add(k.end);
  for (auto& m : memcpys_) add(m.start), add(m.end);
  for (auto& m : memsets_) add(m.start), add(m.end);
  for (auto& s : syncs_) add(s.start), add(s.end);
}

std::optional<int64_t> Tracker::launcher_pid(const std::optional<int64_t>& correlation) const {
  if (correlation) {
    if (const Launch* l = launches_.find(*correlation))
      return store::global_pid(store::pid_of(l->globalTid));
  }
  // One host process (the usual Kineto file): GPU work belongs to it.
  if (processes_.size() == 1) return store::global_pid(processes_.begin()->first);
  return std::nullopt;
}

void Tracker::finish(const std::string& workflow_name) {
  // Vendor: ROCm traces name AMD devices and call hip* APIs.
  bool amd = hip_api_;
  for (const auto& d : meta_.devices)
    if (contains(d.name, "AMD") || contains(d.name, "Radeon") || contains(d.name, "Instinct"))
      amd = true;
  const std::string vendor = mtia_ ? "mtia" : amd ? "amd" : "nvidia";

  for (auto& k : kernels_) {
    k.globalPid = launcher_pid(k.correlationId);
    writer_.add(std::move(k));
  }
  for (auto& m : memcpys_) {
    m.globalPid = launcher_pid(m.correlationId);
    if (m.bytes == 0 && m.correlationId) {
      const Launch* l = launches_.find(*m.correlationId);
      if (l && l->bytes > 0) m.bytes = l->bytes;
    }
    writer_.add(std::move(m));
  }
  for (auto& m : memsets_) {
    m.globalPid = launcher_pid(m.correlationId);
    writer_.add(std::move(m));
  }
  for (auto& s : syncs_) {
    s.globalPid = launcher_pid(s.correlationId);
    if (s.correlationId) {
      if (const Launch* l = launches_.find(*s.correlationId)) s.globalTid = l->globalTid;
    }
    writer_.add(std::move(s));
  }
  kernels_.clear();
  memcpys_.clear();
  memsets_.clear();
  syncs_.clear();

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
