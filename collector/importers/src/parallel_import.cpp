#include "parallel_import.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace fleetscope::importers {

namespace {

// Thrown into the imports still running once another one failed.
struct ImportStopped : std::exception {
  const char* what() const noexcept override { return "import stopped"; }
};

// File i may write its metadata once files 0..i-1 are done (or as soon as any import failed, to
// stop).
class Turns {
 public:
  explicit Turns(size_t files) : done_(files, false) {}
  void wait_for(size_t file) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stopped_ || first_open_ >= file; });
    if (stopped_) throw ImportStopped{};
  }
  void done(size_t file) {
    std::lock_guard lock(mu_);
    done_[file] = true;
    while (first_open_ < done_.size() && done_[first_open_]) ++first_open_;
    changed_.notify_all();
  }
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    stopped_flag_ = true;
    changed_.notify_all();
  }
  bool stopped() const { return stopped_flag_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<bool> done_;
  size_t first_open_ = 0;  // every file before it is done
  bool stopped_ = false;
  std::atomic<bool> stopped_flag_{false};
};

// One file's view of the shared writer: rows go straight through; the capture was created in
// file order beforehand; metadata waits for the file's turn.
class OrderedSink final : public store::UniformEventSink<OrderedSink, store::RowSink> {
 public:
  OrderedSink(store::Writer& writer, int64_t capture_id, size_t file, Turns& turns)
      : writer_(writer), capture_id_(capture_id), file_(file), turns_(turns) {}

  int64_t add_capture(const store::Capture& capture) override {
    check();
    store::Capture c = capture;
    c.id = capture_id_;
    writer_.update_capture(c);
    return capture_id_;
  }
  void update_capture(const store::Capture& c) override {
    turn();
    writer_.update_capture(c);
  }
  int64_t add_host(const store::Host& h) override {
    turn();
    return writer_.add_host(h);
  }
  int64_t add_workflow(const store::Workflow& w) override {
    turn();
    return writer_.add_workflow(w);
  }
  void upsert_process(const store::Process& p) override {
    turn();
    writer_.upsert_process(p);
  }
  void add_gpu(const store::GpuInfo& g) override {
    turn();
    writer_.add_gpu(g);
  }
  void shift_times(int64_t capture_id, int64_t delta_ns) override {
    check();
    writer_.shift_times(capture_id, delta_ns);  // this capture's rows only: any order
  }

  template <class Row>
  void put(Row&& row) {
    check();
    writer_.add(std::forward<Row>(row));
  }

 private:
  void check() const {
    if (turns_.stopped()) throw ImportStopped{};
  }
  void turn() {
    if (!has_turn_) turns_.wait_for(file_);
    has_turn_ = true;
  }

  store::Writer& writer_;
  int64_t capture_id_;
  size_t file_;
  Turns& turns_;
  bool has_turn_ = false;
};

}  // namespace

// One file per core. Each file is then parsed on its worker alone (no parse thread per file,
// import_in_parallel): measured on two cores (docs/benchmarks.md), 0.92-0.99x the serial time
// for four 19 MB files and for two 194 MB files; with a parse thread per file as well, twice as
// many busy threads as cores made two 194 MB files 1.08-1.18x slower than serial.
size_t parallel_import_workers(size_t files) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(files, cores));
}

std::vector<ImportResult> import_in_parallel(const std::vector<std::string>& paths,
                                             store::Writer& writer, const ImportOptions& options,
                                             size_t workers) {
  const size_t files = paths.size();
  workers = std::max<size_t>(1, std::min(workers, files));
  // Captures in file order, as the serial import numbers them; each import fills its own in.
  std::vector<int64_t> capture_ids;
  for (const auto& path : paths) {
    store::Capture placeholder;
    placeholder.source_path = path;
    capture_ids.push_back(writer.add_capture(placeholder));
  }
  ImportOptions per_file = options;
  per_file.memory_budget_bytes = std::max<int64_t>(
      int64_t{16} << 20, options.memory_budget_bytes / static_cast<int64_t>(workers));
  // Each file already has a core: a parse thread per file as well would put twice as many busy
  // threads as cores on the machine (2 x 194 MB files on 2 cores: 1.08-1.18x the serial time
  // with them, 0.92-0.97x without; docs/benchmarks.md).
  if (workers > 1 && options.parse_thread_min_bytes < 0)
    per_file.parse_thread_min_bytes = INT64_MAX;
  std::mutex progress_mu;  // the caller's progress callback is called from one thread at a time
  if (options.progress)
    per_file.progress = [&](const ImportProgress& p) {
      std::lock_guard lock(progress_mu);
      options.progress(p);
    };
  Turns turns(files);
  std::vector<std::optional<ImportResult>> results(files);
  std::vector<std::exception_ptr> errors(files);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= files) return;
      try {
        OrderedSink sink(writer, capture_ids[i], i, turns);
        results[i] = import_file(paths[i], sink, per_file);
      } catch (const ImportStopped&) {
      } catch (...) {
        errors[i] = std::current_exception();
        turns.stop();
      }
      turns.done(i);
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<ImportResult> out;
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

}  // namespace fleetscope::importers
