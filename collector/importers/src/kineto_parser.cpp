#include "kineto_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace fleetscope::importers::kineto {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

EventKind classify(const RawEvent& ev, const char** cpu_category) {
  // Flows (s/f: ac2g, fwdbwd), counters, B/E: the walker read only their "ph".
  if (!phase_is_read(ev.ph)) return EventKind::ignored;
  if (ev.ph == "M") return EventKind::metadata;
  if (ev.ph == "i" || ev.ph == "I")
    return ev.name == "[memory]" ? EventKind::memory : EventKind::ignored;
  const std::string_view c = ev.cat;
  auto cpu = [&](const char* category) {
    if (cpu_category) *cpu_category = category;
    return EventKind::cpu_op;
  };
  if (iequals(c, "kernel")) return EventKind::kernel;
  if (iequals(c, "gpu_memcpy") || iequals(c, "memcpy")) return EventKind::memcpy;
  if (iequals(c, "gpu_memset") || iequals(c, "memset")) return EventKind::memset;
  if (iequals(c, "cuda_runtime") || iequals(c, "runtime")) {
    // Old TensorBoard-era traces filed driver calls under "Runtime" too.
    bool driver =
        ev.name.size() > 2 && ev.name.substr(0, 2) == "cu" && ev.name.substr(0, 4) != "cuda";
    return driver ? EventKind::driver : EventKind::runtime;
  }
  if (iequals(c, "cuda_driver") || iequals(c, "driver")) return EventKind::driver;
  if (iequals(c, "cuda_sync")) return EventKind::sync;
  if (iequals(c, "cpu_op") || iequals(c, "operator")) return cpu("cpu_op");
  if (iequals(c, "user_annotation")) return cpu("user_annotation");
  if (iequals(c, "gpu_user_annotation")) return cpu("gpu_user_annotation");
  if (iequals(c, "python_function")) return cpu("python_function");
  // Other accelerators, as Kineto names them (libkineto ActivityType.h aliases MTIA_CCP_EVENTS to
  // CONCURRENT_KERNEL and MTIA_RUNTIME / XPU_RUNTIME / PRIVATEUSE1_RUNTIME to RUNTIME).
  if (iequals(c, "mtia_ccp_events")) return EventKind::kernel;
  if (iequals(c, "mtia_runtime") || iequals(c, "xpu_runtime") || iequals(c, "privateuse1_runtime"))
    return EventKind::runtime;
  if (iequals(c, "xpu_driver") || iequals(c, "privateuse1_driver")) return EventKind::driver;
  // Any other complete event on a device stream is device work: HTA puts every event whose
  // args carry a stream on the device timeline (trace_df "stream" column >= 0).
  if (ev.args.stream.is_number() && ev.args.stream.fits_int() && ev.args.stream.as_int() >= 0)
    return EventKind::kernel;
  return EventKind::ignored;  // Trace spans, cuda_profiler_range, overhead, ...
}

std::optional<int32_t> parse_memory_kind(std::string_view w) {
  w = trim(w);
  if (iequals(w, "Pageable")) return store::kMemPageable;
  if (iequals(w, "Pinned")) return store::kMemPinned;
  if (iequals(w, "Device")) return store::kMemDevice;
  if (iequals(w, "Array")) return store::kMemArray;
  if (iequals(w, "Managed")) return store::kMemManaged;
  if (iequals(w, "Device Static")) return store::kMemDeviceStatic;
  if (iequals(w, "Managed Static")) return store::kMemManagedStatic;
  if (iequals(w, "Unknown")) return store::kMemUnknown;
  return std::nullopt;  // e.g. ROCm's "Host": pageable or pinned is not said
}

MemcpyName parse_memcpy_name(std::string_view name) {
  MemcpyName out;
  std::string_view rest = name;
  if (rest.substr(0, 7) == "Memcpy ") rest.remove_prefix(7);
  std::string_view kind = rest.substr(0, rest.find(' '));
  static const struct {
    const char* text;
    int32_t value;
  } kinds[] = {{"HtoD", store::kMemcpyHtoD}, {"DtoH", store::kMemcpyDtoH},
               {"HtoA", store::kMemcpyHtoA}, {"AtoH", store::kMemcpyAtoH},
               {"AtoA", store::kMemcpyAtoA}, {"AtoD", store::kMemcpyAtoD},
               {"DtoA", store::kMemcpyDtoA}, {"DtoD", store::kMemcpyDtoD},
               {"HtoH", store::kMemcpyHtoH}, {"PtoP", store::kMemcpyPtoP}};
  for (const auto& k : kinds)
    if (kind == k.text) out.copyKind = k.value;
  auto open = name.find('(');
  auto arrow = name.find("->");
  auto close = name.rfind(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos &&
      close != std::string_view::npos && open < arrow && arrow < close) {
    out.srcKind = parse_memory_kind(name.substr(open + 1, arrow - open - 1));
    out.dstKind = parse_memory_kind(name.substr(arrow + 2, close - arrow - 2));
  }
  return out;
}

std::optional<int32_t> parse_memset_kind(std::string_view name) {
  auto open = name.find('(');
  auto close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  return parse_memory_kind(name.substr(open + 1, close - open - 1));
}

int32_t parse_sync_kind(std::string_view t) {
  t = trim(t);
  if (iequals(t, "Event Sync")) return store::kSyncEvent;
  if (iequals(t, "Stream Wait Event")) return store::kSyncStreamWaitEvent;
  if (iequals(t, "Stream Sync")) return store::kSyncStream;
  if (iequals(t, "Context Sync")) return store::kSyncContext;
  return store::kSyncUnknown;
}

std::optional<int64_t> profiler_step(std::string_view name) {
  constexpr std::string_view prefix = "ProfilerStep#";
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  int64_t n = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
  return n;
}

// ---------------------------------------------------------------------------------------------

void Parser::missing(const RawEvent& ev, const char* field) const {
  tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                           std::string(ev.cat) + "\"): missing required field \"" + field + "\"");
}

void Parser::wrong(const RawEvent& ev, const char* field, const char* expected) const {
  tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                           std::string(ev.cat) + "\"): field \"" + field +
                           "\" has the wrong type, expected " + expected);
}

void Parser::not_before_zero(const RawEvent& ev) const {
  // Kineto never writes a negative "ts": its writer clamps a time before baseTimeNanoseconds to 0
  // (output_json.cpp, transToRelativeTime: "Chrome trace and json processing will throw a parser
  // error"), and an absolute time before 1970 is no CUPTI timestamp. One was imported as given and
  // put the event before the capture began.
  if (*ev.ts_ns < 0)
    tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                             std::string(ev.cat) + "\"): field \"ts\" is negative (" +
                             std::to_string(*ev.ts_ns) + " ns), expected a time >= 0");
}

void Parser::span(const RawEvent& ev, int64_t& start, int64_t& end) const {
  if (!ev.ts_ns) missing(ev, "ts");
  if (!ev.dur_ns) missing(ev, "dur");
  not_before_zero(ev);
  if (__builtin_add_overflow(base_ns_, *ev.ts_ns, &start))
    wrong(ev, "ts", "a time that fits in int64 nanoseconds after baseTimeNanoseconds");
  // A complete event that ends before it starts is refused, not clamped to 0 (which hid the bad
  // timestamps): Perfetto's trace processor drops such a slice as an import error
  // (SliceTracker::Scoped, stat slice_negative_duration: "usually indicates incorrect timestamps
  // in the trace data"), and every row needs end >= start.
  if (*ev.dur_ns < 0)
    tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                             std::string(ev.cat) + "\"): field \"dur\" is negative (" +
                             std::to_string(*ev.dur_ns) + " ns), expected a duration >= 0");
  if (__builtin_add_overflow(start, *ev.dur_ns, &end))
    wrong(ev, "dur", "a duration whose end fits in int64 nanoseconds");
}

int64_t Parser::instant(const RawEvent& ev) const {
  if (!ev.ts_ns) missing(ev, "ts");
  not_before_zero(ev);
  int64_t t = 0;
  if (__builtin_add_overflow(base_ns_, *ev.ts_ns, &t))
    wrong(ev, "ts", "a time that fits in int64 nanoseconds after baseTimeNanoseconds");
  return t;
}

int32_t Parser::narrow(const RawEvent& ev, int64_t value, const char* field) const {
  // CUPTI's stream, context and callback ids are uint32: Kineto prints 4294967295 for "none",
  // which the int32 columns keep as -1 (two's complement, as CUPTI's own struct would read).
  const bool unsigned_id = std::string_view(field) == "args.stream" ||
                           std::string_view(field) == "args.context" ||
                           std::string_view(field) == "args.cbid";
  if (unsigned_id && value > INT32_MAX && value <= UINT32_MAX)
    return static_cast<int32_t>(static_cast<uint32_t>(value));
  if (value < INT32_MIN || value > INT32_MAX)
    tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                             std::string(ev.cat) + "\"): field \"" + field +
                             "\" is out of range (" + std::to_string(value) +
                             "), expected a 32-bit integer");
  return static_cast<int32_t>(value);
}

void Parser::require_name(const RawEvent& ev) const {
  if (!ev.has_name) missing(ev, "name");
}

std::optional<int64_t> Parser::int_arg(const RawEvent& ev, const ArgValue& v,
                                       const char* field) const {
  if (!v.present()) return std::nullopt;
  if (v.is_number()) {
    if (!v.fits_int()) wrong(ev, field, "an integer in the int64 range");
    // Ids, counts and sizes are integers wherever Kineto writes them; 1.5 was truncated to 1 (a
    // stream "1.5" became stream 1). A whole number written as a real (7.0) is kept.
    if (v.kind == ArgValue::Kind::real && v.d != std::trunc(v.d)) {
      std::ostringstream text;
      text << v.d;
      tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                               std::string(ev.cat) + "\"): field \"" + field +
                               "\" is not a whole number (" + text.str() +
                               "), expected an integer");
    }
    return v.as_int();
  }
  if (v.kind == ArgValue::Kind::string) {  // ROCm writes some numbers as strings ("2560")
    int64_t n = 0;
    auto [p, ec] = std::from_chars(v.s.data(), v.s.data() + v.s.size(), n);
    if (ec == std::errc() && p == v.s.data() + v.s.size()) return n;
  }
  wrong(ev, field, "an integer");
}

void Parser::out_of_range(const RawEvent& ev, const char* field, const std::string& value,
                          const char* expected) const {
  tok_.fail(ev.offset, "traceEvents[" + std::to_string(ev.index) + "] (cat \"" +
                           std::string(ev.cat) + "\"): field \"" + field + "\" is out of range (" +
                           value + "), expected " + expected);
}

int64_t Parser::at_least(const RawEvent& ev, int64_t value, int64_t min, const char* field,
                         const char* expected) const {
  if (value < min) out_of_range(ev, field, std::to_string(value), expected);
  return value;
}

int32_t Parser::device_of(const RawEvent& ev) const {
  // A GPU's index: no profiler writes a negative one for device work (it became a "GPU -1" with
  // findings of its own).
  constexpr const char* gpu_index = "a GPU index (0 or more)";
  if (auto d = int_arg(ev, ev.args.device, "args.device"))
    return narrow(ev, at_least(ev, *d, 0, "args.device", gpu_index), "args.device");
  if (ev.pid.present && ev.pid.is_int)
    return narrow(ev, at_least(ev, ev.pid.value, 0, "pid", gpu_index), "pid");
  missing(ev, "args.device");
}

int32_t Parser::stream_of(const RawEvent& ev) const {
  if (auto s = int_arg(ev, ev.args.stream, "args.stream")) return narrow(ev, *s, "args.stream");
  if (ev.tid.present && ev.tid.is_int) return narrow(ev, ev.tid.value, "tid");
  // "stream 7" thread names of old traces.
  if (ev.tid.present && ev.tid.text.substr(0, 7) == "stream ") {
    int64_t n = 0;
    auto t = ev.tid.text.substr(7);
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
    if (ec == std::errc()) return narrow(ev, n, "tid");
  }
  missing(ev, "args.stream");
}

store::Kernel Parser::kernel(const RawEvent& ev) const {
  require_name(ev);
  store::Kernel k;
  span(ev, k.start, k.end);
  k.deviceId = device_of(ev);
  k.streamId = stream_of(ev);
  if (auto c = int_arg(ev, ev.args.context, "args.context"))
    k.contextId = narrow(ev, *c, "args.context");
  k.correlationId = int_arg(ev, ev.args.correlation, "args.correlation");
  k.demangledName = std::string(ev.name);
  const auto& a = ev.args;
  // A launch's grid and block dimensions are 1 or more (CUDA refuses 0); a negative grid made
  // a few_blocks finding.
  auto dimension = [&](int64_t v, const char* field) {
    return narrow(ev, at_least(ev, v, 1, field, "a dimension of 1 or more"), field);
  };
  if (a.grid.kind == ArgValue::Kind::triple) {
    k.gridX = dimension(a.grid.v[0], "args.grid");
    k.gridY = dimension(a.grid.v[1], "args.grid");
    k.gridZ = dimension(a.grid.v[2], "args.grid");
  } else if (a.grid.present()) {
    wrong(ev, "args.grid", "an array of 3 integers");
  }
  if (a.block.kind == ArgValue::Kind::triple) {
    k.blockX = dimension(a.block.v[0], "args.block");
    k.blockY = dimension(a.block.v[1], "args.block");
    k.blockZ = dimension(a.block.v[2], "args.block");
  } else if (a.block.present()) {
    wrong(ev, "args.block", "an array of 3 integers");
  }
  if (auto r = int_arg(ev, a.registers, "args.registers per thread"))
    k.registersPerThread = narrow(ev, at_least(ev, *r, 0, "args.registers per thread", "0 or more"),
                                  "args.registers per thread");
  // Kineto reports static + dynamic shared memory as one number; it is kept as the static part.
  if (auto s = int_arg(ev, a.shared_memory, "args.shared memory"))
    k.staticSharedMemory =
        narrow(ev, at_least(ev, *s, 0, "args.shared memory", "0 or more"), "args.shared memory");
  auto real = [&](const ArgValue& v, const char* field, double max,
                  const char* expected) -> std::optional<double> {
    if (!v.present()) return std::nullopt;
    if (!v.is_number()) wrong(ev, field, "a number");
    const double x = v.as_real();
    if (!(x >= 0 && x <= max)) {
      std::ostringstream text;
      text << x;
      out_of_range(ev, field, text.str(), expected);
    }
    return x;
  };
  constexpr double unbounded = std::numeric_limits<double>::max();
  k.blocksPerSm = real(a.blocks_per_sm, "args.blocks per SM", unbounded, "0 or more");
  k.warpsPerSm = real(a.warps_per_sm, "args.warps per SM", unbounded, "0 or more");
  k.estOccupancy =
      real(a.est_occupancy, "args.est. achieved occupancy %", 100, "a percentage from 0 to 100");
  return k;
}

store::Memcpy Parser::memcpy(const RawEvent& ev) const {
  require_name(ev);
  store::Memcpy m;
  span(ev, m.start, m.end);
  m.deviceId = device_of(ev);
  m.streamId = stream_of(ev);
  if (auto c = int_arg(ev, ev.args.context, "args.context"))
    m.contextId = narrow(ev, *c, "args.context");
  m.correlationId = int_arg(ev, ev.args.correlation, "args.correlation");
  m.bytes = at_least(ev, int_arg(ev, ev.args.bytes, "args.bytes").value_or(0), 0, "args.bytes",
                     "0 or more");
  MemcpyName parsed = parse_memcpy_name(ev.name);
  m.copyKind = parsed.copyKind;
  m.srcKind = parsed.srcKind;
  m.dstKind = parsed.dstKind;
  if (m.copyKind == store::kMemcpyUnknown && ev.args.kind.kind == ArgValue::Kind::string) {
    // ROCm: args.kind "HtoD"
    m.copyKind = parse_memcpy_name("Memcpy " + std::string(ev.args.kind.s)).copyKind;
  }
  return m;
}

store::Memset Parser::memset(const RawEvent& ev) const {
  require_name(ev);
  store::Memset m;
  span(ev, m.start, m.end);
  m.deviceId = device_of(ev);
  m.streamId = stream_of(ev);
  if (auto c = int_arg(ev, ev.args.context, "args.context"))
    m.contextId = narrow(ev, *c, "args.context");
  m.correlationId = int_arg(ev, ev.args.correlation, "args.correlation");
  m.bytes = at_least(ev, int_arg(ev, ev.args.bytes, "args.bytes").value_or(0), 0, "args.bytes",
                     "0 or more");
  m.memKind = parse_memset_kind(ev.name);
  return m;
}

store::RuntimeCall Parser::runtime(const RawEvent& ev, bool driver) const {
  require_name(ev);
  store::RuntimeCall r;
  span(ev, r.start, r.end);
  r.eventClass = driver ? store::ApiClass::driver : store::ApiClass::runtime;
  r.correlationId = int_arg(ev, ev.args.correlation, "args.correlation");
  if (auto c = int_arg(ev, ev.args.cbid, "args.cbid")) r.cbid = narrow(ev, *c, "args.cbid");
  r.name = std::string(ev.name);
  return r;
}

store::Sync Parser::sync(const RawEvent& ev) const {
  require_name(ev);
  store::Sync s;
  span(ev, s.start, s.end);
  if (auto d = int_arg(ev, ev.args.device, "args.device"))
    s.deviceId = narrow(ev, *d, "args.device");
  else if (ev.pid.present && ev.pid.is_int)
    s.deviceId = narrow(ev, ev.pid.value, "pid");
  if (auto c = int_arg(ev, ev.args.context, "args.context"))
    s.contextId = narrow(ev, *c, "args.context");
  if (auto st = int_arg(ev, ev.args.stream, "args.stream"); st && *st >= 0)
    s.streamId = narrow(ev, *st, "args.stream");
  s.correlationId = int_arg(ev, ev.args.correlation, "args.correlation");
  s.syncType = parse_sync_kind(
      ev.args.sync_kind.kind == ArgValue::Kind::string ? ev.args.sync_kind.s : ev.name);
  if (auto e = int_arg(ev, ev.args.wait_event_id, "args.wait_on_cuda_event_id"); e && *e >= 0)
    s.eventId = *e;
  // The recording the wait is on (Kineto writes -1 when it did not see the cudaEventRecord).
  if (auto c =
          int_arg(ev, ev.args.wait_record_correlation, "args.wait_on_cuda_event_record_corr_id");
      c && *c >= 0)
    s.eventRecordCorrelationId = *c;
  if (auto st = int_arg(ev, ev.args.wait_on_stream, "args.wait_on_stream"); st && *st >= 0)
    s.eventRecordStreamId = narrow(ev, *st, "args.wait_on_stream");
  return s;
}

store::CpuOp Parser::cpu_op(const RawEvent& ev, const char* category) const {
  require_name(ev);
  store::CpuOp op;
  span(ev, op.start, op.end);
  op.name = std::string(ev.name);
  op.category = category;
  op.externalId = int_arg(ev, ev.args.external_id, "args.External id");
  return op;
}

store::MemoryEvent Parser::memory(const RawEvent& ev) const {
  store::MemoryEvent m;
  m.ts = instant(ev);
  auto type = int_arg(ev, ev.args.device_type, "args.Device Type").value_or(1);
  auto id = int_arg(ev, ev.args.device_id, "args.Device Id").value_or(-1);
  m.deviceId = type == 0 ? -1 : narrow(ev, id, "args.Device Id");  // c10 DeviceType 0 = CPU
  m.address = int_arg(ev, ev.args.addr, "args.Addr");
  auto bytes = int_arg(ev, ev.args.bytes, "args.Bytes");
  if (!bytes) missing(ev, "args.Bytes");
  m.bytes = *bytes;
  m.total_allocated = int_arg(ev, ev.args.total_allocated, "args.Total Allocated");
  m.total_reserved = int_arg(ev, ev.args.total_reserved, "args.Total Reserved");
  return m;
}

}  // namespace fleetscope::importers::kineto
