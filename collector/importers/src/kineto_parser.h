// Kineto importer, stage 2 of 3: the parser. One RawEvent → its kind and a typed store row.
// Knows every Kineto category spelling since 2021 (kernel/Kernel, gpu_memcpy/Memcpy,
// gpu_memset/Memset, cuda_runtime/Runtime, cuda_driver, cuda_sync, cpu_op/Operator,
// user_annotation, gpu_user_annotation, python_function) and the args each carries. Stateless:
// what needs other events (correlation, processes, steps) is the tracker's job.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fleetscope/store/rows.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::kineto {

enum class EventKind {
  kernel,
  memcpy,
  memset,
  runtime,
  driver,
  sync,
  cpu_op,
  memory,
  metadata,
  ignored
};

// Classifies by phase and category. For cpu_op, `cpu_category` receives the schema category
// ('cpu_op', 'user_annotation', 'gpu_user_annotation', 'python_function').
EventKind classify(const RawEvent& ev, const char** cpu_category = nullptr);

// "Memcpy HtoD (Pageable -> Device)" → copy kind and source/destination memory kinds.
struct MemcpyName {
  int32_t copyKind = store::kMemcpyUnknown;
  std::optional<int32_t> srcKind, dstKind;
};
MemcpyName parse_memcpy_name(std::string_view name);
// "Memset (Device)" → memory kind.
std::optional<int32_t> parse_memset_kind(std::string_view name);
// "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static".
std::optional<int32_t> parse_memory_kind(std::string_view word);
// "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" → CUpti sync type.
int32_t parse_sync_kind(std::string_view text);
// "ProfilerStep#12" → 12.
std::optional<int64_t> profiler_step(std::string_view name);

// Builders. `base_ns` is added to every timestamp; `tok` reports errors with the file position.
// They validate the fields the row needs (ts, dur, name, device, stream) and throw InputError.
class Parser {
 public:
  Parser(const Tokenizer& tok, int64_t base_ns) : tok_(tok), base_ns_(base_ns) {}

  store::Kernel kernel(const RawEvent& ev) const;
  store::Memcpy memcpy(const RawEvent& ev) const;
  store::Memset memset(const RawEvent& ev) const;
  store::RuntimeCall runtime(const RawEvent& ev, bool driver) const;  // globalTid set by tracker
  store::Sync sync(const RawEvent& ev) const;
  store::CpuOp cpu_op(const RawEvent& ev, const char* category) const;  // globalTid set by tracker
  store::MemoryEvent memory(const RawEvent& ev) const;

  // Start/end in absolute ns for a complete ('X') event; validates ts and dur.
  void span(const RawEvent& ev, int64_t& start, int64_t& end) const;
  int64_t instant(const RawEvent& ev) const;
  [[noreturn]] void missing(const RawEvent& ev, const char* field) const;
  [[noreturn]] void wrong(const RawEvent& ev, const char* field, const char* expected) const;

 private:
  void require_name(const RawEvent& ev) const;
  // An error unless the event's ts is 0 or more.
  void not_before_zero(const RawEvent& ev) const;
  int32_t device_of(const RawEvent& ev) const;
  int32_t stream_of(const RawEvent& ev) const;
  int32_t narrow(const RawEvent& ev, int64_t value, const char* field) const;
  // `value` when it is `min` or more, else an error naming the field and what was expected.
  int64_t at_least(const RawEvent& ev, int64_t value, int64_t min, const char* field,
                   const char* expected) const;
  [[noreturn]] void out_of_range(const RawEvent& ev, const char* field, const std::string& value,
                                 const char* expected) const;
  std::optional<int64_t> int_arg(const RawEvent& ev, const ArgValue& v, const char* field) const;

  const Tokenizer& tok_;
  int64_t base_ns_;
};

}  // namespace fleetscope::importers::kineto
