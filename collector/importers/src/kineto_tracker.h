// Kineto importer, stage 3 of 3: the tracker. Holds what spans events: processes and threads
// (string tids get stable synthetic ids), launch → GPU-work correlation (runtime call thread and
// process for each correlation id), ProfilerStep#N iterations, devices seen, the capture's time
// span and vendor. A GPU-side row is held until its launching call is seen (or until finish()),
// so its globalPid comes from that call whatever the order in the file; CPU-side rows go to the
// writer at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/writer.h"
#include "kineto_tokenizer.h"

namespace fleetscope::importers::kineto {

class Tracker {
 public:
  Tracker(store::RowSink& writer, int64_t capture_id, const TraceMeta& meta, ImportResult& result);

  // Thread id of an event: numeric tids as they are, string tids mapped to synthetic ids.
  int64_t tid_of(const RawId& tid);
  int64_t pid_of(const RawId& pid) const { return pid.is_int ? pid.value : 0; }

  void on_metadata(const RawEvent& ev);
  void add_runtime(store::RuntimeCall row, const RawEvent& ev);
  void add_cpu_op(store::CpuOp row, const RawEvent& ev);
  void add_memory(store::MemoryEvent row, const RawEvent& ev);
  void add_kernel(store::Kernel row);
  void add_memcpy(store::Memcpy row);
  void add_memset(store::Memset row);
  void add_sync(store::Sync row);

  // Adds delta to every time held (pending GPU rows, steps, process and capture spans): the
  // trailing baseTimeNanoseconds differed from the base assumed while streaming.
  void shift(int64_t delta);
  // MTIA (Meta's accelerator) device work or runtime calls were seen: vendor 'mtia'.
  void saw_mtia() { mtia_ = true; }

  // Emits GPU rows, iterations, processes, GPUs; fills the result (span, vendor, note).
  void finish(const std::string& workflow_name);

 private:
  struct Launch {
    int64_t globalTid = 0;
    int64_t bytes = -1;  // ROCm hipMemcpy* 'size' arg
  };
  // Correlation id -> launch: open addressing in one array (one entry per runtime call, millions
  // in a large trace: a node-based map was a malloc per call and a pointer chase per lookup).
  class LaunchMap {
   public:
    void reserve(size_t entries);
    Launch& operator[](int64_t correlation);
    const Launch* find(int64_t correlation) const;

   private:
    static constexpr int64_t kEmpty = INT64_MIN;  // a real INT64_MIN key lives in `min_key_`
    struct Slot {
      int64_t key = kEmpty;
      Launch launch;
    };
    size_t index_of(int64_t key) const {
      // Consecutive ids (the usual case) land in consecutive slots, so lookups stay in cache;
      // the bits above the table size are mixed in (Fibonacci multiply), so ids that differ only
      // there do not pile onto one slot.
      const auto k = static_cast<uint64_t>(key);
      return static_cast<size_t>((k ^ ((k >> bits_) * 0x9E3779B97F4A7C15ULL)) &
                                 (slots_.size() - 1));
    }
    std::vector<Slot> slots_;  // a power of two, at most 3/4 full
    int bits_ = 0;
    size_t size_ = 0;
    std::optional<Launch> min_key_;
  };
  struct ProcessInfo {
    std::string name;
    int64_t first = INT64_MAX, last = INT64_MIN;
  };
  struct Step {
    int64_t start = 0, end = 0;
  };
  void see(int64_t start, int64_t end);
  void see_process(int64_t pid, int64_t start, int64_t end);
  std::optional<int64_t> fallback_pid() const;
  const Launch* launch_of(const std::optional<int64_t>& correlation) const;

  store::RowSink& writer_;
  int64_t capture_id_;
  const TraceMeta& meta_;
  ImportResult& result_;

  std::unordered_map<std::string, int64_t> string_tids_;
  LaunchMap launches_;
  std::map<int64_t, ProcessInfo> processes_;
  std::unordered_map<int64_t, std::string> process_names_;
  std::map<std::pair<int64_t, int64_t>, Step> steps_;  // (pid, N)
  std::set<int32_t> devices_;
  // GPU rows whose launching call has not been seen yet. Kineto writes a GPU event a couple of
  // events before its runtime call, so the recent ones are swept as launches arrive and go to the
  // writer then, in file order (the writer inserts them while the file is still being read, not
  // all at the end). A row still unmatched after kLaunchLookahead events waits for finish(), which
  // resolves it against every launch in the file, or the one-process fallback.
  static constexpr int64_t kLaunchLookahead = 65536;
  static constexpr size_t kFirstSweep = 64;
  template <class Row>
  struct Deferred {
    std::vector<std::pair<int64_t, Row>> recent;  // (event number, row), file order
    std::vector<Row> late;                        // for finish(), file order
    size_t sweep_at = kFirstSweep;  // doubles with what stays, so sweeps cost O(1) per row
  };
  template <class Row>
  void defer(Deferred<Row>& rows, Row&& row);
  template <class Row>
  void sweep(Deferred<Row>& rows);
  template <class Row>
  void flush_deferred(Deferred<Row>& rows);
  // Fills what the launching call tells (process, thread, bytes); `launch` null: finish()'s
  // fallback (the only process, if there is one).
  void resolve(store::Kernel& row, const Launch* launch) const;
  void resolve(store::Memcpy& row, const Launch* launch) const;
  void resolve(store::Memset& row, const Launch* launch) const;
  void resolve(store::Sync& row, const Launch* launch) const;
  Deferred<store::Kernel> kernels_;
  Deferred<store::Memcpy> memcpys_;
  Deferred<store::Memset> memsets_;
  Deferred<store::Sync> syncs_;
  bool hip_api_ = false;
  bool mtia_ = false;
  int64_t start_ = INT64_MAX, end_ = INT64_MIN;
};

}  // namespace fleetscope::importers::kineto
