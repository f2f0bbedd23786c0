#include "fleetscope/store/writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/table_io.h"

namespace fleetscope::store {

// One vector per event table (generated from schema/tables.py) and a row count. Cleared for
// reuse, the vectors keep their capacity (no regrowth, no fresh pages to fault in for the next
// batch).
struct Writer::Batch : RowVectors {
  size_t rows = 0;
  uint64_t ticket = 0;  // its place in the queue: batches are committed in ticket order
  void clear() {
    RowVectors::clear();
    rows = 0;
  }
};

namespace {

// Rows are inserted with multi-row INSERTs (fewer statement executions per row is where SQLite
// bulk-load time goes): kRowsPerStatement at a time, then the remainder kRowsPerShortStatement at a
// time, the last ones one by one. 128 rather than 32 rows a statement took about 4 % off the
// writer thread's CPU per kernel row (docs/benchmarks.md, "Daemon"). The column list and the
// binding of each table come from its description (io::TableIo, table_io.h).
constexpr int kRowsPerStatement = 128;
constexpr int kRowsPerShortStatement = 8;

std::string values_list(int columns, int rows) {
  std::string one = "(";
  for (int c = 0; c < columns; ++c) one += c ? ",?" : "?";
  one += ")";
  std::string sql;
  for (int r = 0; r < rows; ++r) sql += (r ? "," : "") + one;
  return sql;
}

template <class Row>
std::string insert_sql(int rows) {
  using Io = io::TableIo<Row>;
  return std::string(Io::insert_verb) + " INTO " + Io::table + "(" + Io::insert_columns +
         ") VALUES " + values_list(Io::insert_count, rows);
}

// Asks the kernel to begin writing the file's dirty pages (asynchronously; errors are for the
// later fsync to report).
void start_writeback(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  ::close(fd);
}

}  // namespace

struct Writer::Impl {
  Impl(Database database, WriterOptions opts) : db(std::move(database)), options(opts) {}

  Database db;
  WriterOptions options;
  std::string path;

  // Producer side, guarded by `mu`.
  std::mutex mu;
  std::condition_variable work_ready, space_ready, idle;
  std::unique_ptr<Batch> current = std::make_unique<Batch>();
  std::deque<std::unique_ptr<Batch>> queue;
  std::vector<std::unique_ptr<Batch>> spare;  // written batches, for reuse (not yet cleared)
  static constexpr size_t kSpareBatches = 2;
  bool in_flight = false;
  uint64_t last_ticket = 0;       // of the last batch queued
  uint64_t committed_ticket = 0;  // every batch up to this one is committed
  bool stopping = false;
  bool closed = false;
  std::exception_ptr error;
  WriterStats stats;

  // Database side, guarded by `db_mu` (the background thread and synchronous calls).
  std::mutex db_mu;
  std::unordered_map<std::string, int64_t> string_ids;
  int64_t next_string_id = 1;
  struct KernelNames {
    int64_t demangled, short_name;
  };
  // Demangled kernel names run to kilobytes (templated CUTLASS/cuDNN kernels): hashing every byte
  // of each on every lookup was visible; a sample of the name (its length and 16 words spread
  // over it) picks the bucket, equality still compares it whole.
  struct SampledHash {
    size_t operator()(const std::string& s) const noexcept {
      if (s.size() <= 128) return std::hash<std::string>{}(s);
      uint64_t h = s.size() * 0x9E3779B97F4A7C15ULL;
      for (size_t i = 0; i < 16; ++i) {
        uint64_t w = 0;
        std::memcpy(&w, s.data() + (s.size() - 8) * i / 15, 8);
        h = (h ^ w) * 0x100000001B3ULL;
        h ^= h >> 29;
      }
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::string, KernelNames, SampledHash> kernel_name_ids;
  // The kernel whose names were looked up last and their ids: consecutive kernels very often share
  // a name, and each kernel's insert asks twice (demangledName, shortName). Reset per batch.
  const Kernel* last_kernel = nullptr;
  KernelNames last_kernel_names{};
  // (table, capture) -> max duration. Rows come in long runs of one table and one capture: the
  // last slot is remembered, so a row costs a compare, not a map lookup. Tables are named by
  // io::TableIo<Row>::table (one address per table).
  std::map<std::pair<const char*, int64_t>, int64_t> extents;
  const char* last_extent_table = nullptr;
  int64_t last_extent_capture = 0;
  int64_t* last_extent = nullptr;
  // The run of consecutive rowids of one capture that a table's last rows extend
  // (capture_row_ranges): a row of the same capture at rowid last + 1 extends it, any other starts
  // a new one. Recorded (or extended) in capture_row_ranges before each commit (record_ranges).
  struct Run {
    int64_t capture = 0, first = 0, last = 0, rows = 0;
    bool open = false, recorded = true;
  };
  struct TableRuns {
    const char* table = nullptr;
    Run run;
  };
  std::vector<TableRuns> runs;  // one per ranged event table, in the order first written
  std::vector<std::pair<const char*, Run>> ended_runs;  // ended since the last commit
  std::optional<Statement> insert_range;
  std::optional<Statement> insert_string;
  // Prepared statements per table: of kRowsPerStatement rows (or fewer: as many as SQLite's
  // limit on parameters allows), kRowsPerShortStatement rows, one row.
  struct Inserts {
    int rows = 0;  // of `multi`
    std::optional<Statement> multi, short_multi, single;
  };
  std::map<const char*, Inserts> inserts;

  std::thread thread;

  void load_strings() {
    Statement s = db.prepare("SELECT id, value FROM StringIds");
    while (s.step()) {
      int64_t id = s.column_int(0);
      string_ids.emplace(s.column_text(1), id);
      next_string_id = std::max(next_string_id, id + 1);
    }
  }

  int64_t intern_locked(const std::string& text) {
    auto it = string_ids.find(text);
    if (it != string_ids.end()) return it->second;
    if (!insert_string)
      insert_string.emplace(db.raw(), "INSERT INTO StringIds(id, value) VALUES (?, ?)");
    int64_t id = next_string_id++;
    insert_string->bind(1, id).bind(2, text).execute();
    string_ids.emplace(text, id);
    return id;
  }

  // start/end come from files (importers) and may be anything: the span saturates instead of
  // overflowing (found by fuzz_nsys_sqlite with INT64_MIN/INT64_MAX times).
  void note_extent(const char* table, int64_t capture, int64_t start, int64_t end) {
    int64_t duration = 0;
    if (__builtin_sub_overflow(end, start, &duration)) duration = INT64_MAX;
    if (!last_extent || table != last_extent_table || capture != last_extent_capture) {
      last_extent = &extents[{table, capture}];  // std::map: the address stays valid
      last_extent_table = table;
      last_extent_capture = capture;
    }
    if (duration > *last_extent) *last_extent = duration;
  }

  Run& run_of(const char* table) {
    for (TableRuns& t : runs)
      if (t.table == table) return t.run;
    runs.push_back({table, {}});
    return runs.back().run;
  }

  // The rows at rowids first, first + 1, ... (one insert statement's, in order) extend or start
  // their table's run. Rows without a capture (device samples taken outside any) are in none.
  template <class Row>
  void note_rowids(const char* table, Run& run, const Row* rows, size_t count, int64_t first) {
    for (size_t r = 0; r < count; ++r) {
      const int64_t rowid = first + static_cast<int64_t>(r);
      int64_t capture = 0;
      if constexpr (std::is_same_v<decltype(rows[r].captureId), std::optional<int64_t>>) {
        if (!rows[r].captureId) continue;
        capture = *rows[r].captureId;
      } else {
        capture = rows[r].captureId;
      }
      if (run.open && capture == run.capture && rowid == run.last + 1) {
        run.last = rowid;
        ++run.rows;
        run.recorded = false;
        continue;
      }
      if (run.open && !run.recorded) ended_runs.emplace_back(table, run);
      run = {capture, rowid, rowid, 1, true, false};
    }
  }

  // Writes the runs ended or extended since the last commit, in the transaction about to commit,
  // so that every committed row lies in a recorded range. A run that goes on into the next
  // transaction is recorded again there (same first rowid: its row is updated).
  void record_ranges() {
    auto record = [&](const char* table, const Run& run) {
      if (!insert_range)
        insert_range.emplace(db.raw(),
                             "INSERT INTO capture_row_ranges(tbl, captureId, first_rowid, "
                             "last_rowid, rows) VALUES (?,?,?,?,?) ON CONFLICT(tbl, captureId, "
                             "first_rowid) DO UPDATE SET last_rowid = excluded.last_rowid, rows = "
                             "excluded.rows");
      insert_range->bind(1, std::string(table))
          .bind(2, run.capture)
          .bind(3, run.first)
          .bind(4, run.last)
          .bind(5, run.rows)
          .execute();
    };
    for (const auto& [table, run] : ended_runs) record(table, run);
    ended_runs.clear();
    for (TableRuns& t : runs)
      if (t.run.open && !t.run.recorded) {
        record(t.table, t.run);
        t.run.recorded = true;
      }
  }

  // The interner the generated bind code calls (io::TableIo<Row>::bind).
  int64_t intern(const std::string& text) { return intern_locked(text); }
  KernelNames kernel_names(const Kernel& k) {
    if (!last_kernel || (last_kernel != &k && (last_kernel->demangledName != k.demangledName ||
                                               last_kernel->shortName != k.shortName)))
      last_kernel_names = kernel_names_for(k);
    last_kernel = &k;
    return last_kernel_names;
  }

  // Inserts `rows` with the table's prepared statements. A table whose insert replaces by key
  // (iterations) gets one row per statement: a key that repeats keeps "last wins" in row order.
  template <class Row>
  void insert_rows(const std::vector<Row>& rows) {
    using Io = io::TableIo<Row>;
    if (rows.empty()) return;
    Inserts& statements = inserts[Io::table];
    const bool replaces = std::string_view(Io::insert_verb) != "INSERT";
    auto bind = [&](Statement& s, int p, const Row& row) {
      Io::bind(s, p, row, *this);
      if constexpr (requires { Io::extent_end(row); })
        note_extent(Io::table, row.captureId, row.start, Io::extent_end(row));
    };
    Run* run = nullptr;
    if constexpr (Io::row_ranges) run = &run_of(Io::table);
    // `count` rows at a time through `statement` (prepared on first use), from row i on.
    size_t i = 0;
    auto insert_by = [&](std::optional<Statement>& statement, int count) {
      if (rows.size() - i < static_cast<size_t>(count)) return;
      if (!statement) statement.emplace(db.raw(), insert_sql<Row>(count));
      for (; i + static_cast<size_t>(count) <= rows.size(); i += static_cast<size_t>(count)) {
        for (int r = 0; r < count; ++r)
          bind(*statement, 1 + r * Io::insert_count, rows[i + static_cast<size_t>(r)]);
        statement->step();
        statement->reset_keep_bindings();
        // A multi-row INSERT gives its rows consecutive rowids, the last one's reported.
        if constexpr (Io::row_ranges)
          note_rowids(Io::table, *run, &rows[i], static_cast<size_t>(count),
                      sqlite3_last_insert_rowid(db.raw()) - count + 1);
        if (options.commit_early && options.commit_early()) {
          record_ranges();
          db.exec("COMMIT");
          db.exec("BEGIN");
        }
      }
    };
    if (!replaces) {
      if (statements.rows == 0)
        statements.rows =
            std::clamp(sqlite3_limit(db.raw(), SQLITE_LIMIT_VARIABLE_NUMBER, -1) / Io::insert_count,
                       1, kRowsPerStatement);
      insert_by(statements.multi, statements.rows);
      if (statements.rows > kRowsPerShortStatement)
        insert_by(statements.short_multi, kRowsPerShortStatement);
    }
    insert_by(statements.single, 1);
  }

  // One row of a synchronous table (captures, hosts, ...); returns its rowid.
  template <class Row>
  int64_t insert_one(const Row& row) {
    Statement s = db.prepare(insert_sql<Row>(1));
    io::TableIo<Row>::bind(s, 1, row, *this);
    s.execute();
    return sqlite3_last_insert_rowid(db.raw());
  }

  void write_batch(Batch& b) {
    db.exec("BEGIN");
    try {
      write_rows(b);
      record_ranges();
      db.exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  KernelNames kernel_names_for(const Kernel& k) {
    if (k.shortName.empty()) {
      auto it = kernel_name_ids.find(k.demangledName);
      if (it != kernel_name_ids.end()) return it->second;
      KernelNames names{intern_locked(k.demangledName),
                        intern_locked(short_kernel_name(k.demangledName))};
      kernel_name_ids.emplace(k.demangledName, names);
      return names;
    }
    return {intern_locked(k.demangledName), intern_locked(k.shortName)};
  }

  void write_rows(Batch& b) {
    last_kernel = nullptr;  // the batch's memory may be a reused one's
#define FLEETSCOPE_INSERT_ROWS(Row, plural) insert_rows(b.plural);
    FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_INSERT_ROWS)
#undef FLEETSCOPE_INSERT_ROWS
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      work_ready.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping and drained
      std::unique_ptr<Batch> batch = std::move(queue.front());
      queue.pop_front();
      in_flight = true;
      space_ready.notify_all();
      lock.unlock();
      std::exception_ptr failure;
      if (!error) {
        try {
          std::lock_guard db_lock(db_mu);
          write_batch(*batch);
        } catch (...) {
          failure = std::current_exception();
        }
      }
      const size_t rows = batch->rows;
      const uint64_t ticket = batch->ticket;
      // Not cleared here: destroying its rows (a string or two each) is left to the producer that
      // takes it next (add_rows, enqueue_current), off this thread, the bound of the ingest.
      lock.lock();
      if (spare.size() < kSpareBatches) spare.push_back(std::move(batch));
      if (failure && !error) error = failure;
      if (!failure && !error) {
        stats.rows_written += static_cast<int64_t>(rows);
        stats.batches += 1;
        committed_ticket = ticket;
      }
      in_flight = false;
      idle.notify_all();
    }
  }

  // Caller holds mu. A written batch still holds its rows: the caller clears it.
  std::unique_ptr<Batch> spare_batch() {
    if (spare.empty()) return std::make_unique<Batch>();
    std::unique_ptr<Batch> batch = std::move(spare.back());
    spare.pop_back();
    return batch;
  }

  // Caller holds `lock` on mu, and the queue has room.
  uint64_t push(std::unique_ptr<Batch> batch) {
    batch->ticket = ++last_ticket;
    queue.push_back(std::move(batch));
    work_ready.notify_one();
    return last_ticket;
  }

  void wait_for_space(std::unique_lock<std::mutex>& lock) {
    space_ready.wait(lock, [&] { return queue.size() < options.max_queued_batches || error; });
  }

  // Caller holds `lock` on mu.
  void enqueue_current(std::unique_lock<std::mutex>& lock) {
    if (current->rows == 0) return;
    wait_for_space(lock);
    push(std::exchange(current, spare_batch()));
    current->clear();
  }

  uint64_t add_rows(RowVectors& rows, size_t row_count) {
    std::unique_lock lock(mu);
    if (closed) throw Error(path + ": writer already finished");
    if (row_count == 0) return last_ticket;
    wait_for_space(lock);
    std::unique_ptr<Batch> batch = spare_batch();
    std::swap(static_cast<RowVectors&>(*batch), rows);  // the caller keeps the earlier vectors
    batch->rows = row_count;
    const uint64_t ticket = push(std::move(batch));
    lock.unlock();
    rows.clear();  // the earlier batch's rows are destroyed on the caller's thread, unlocked
    return ticket;
  }

  void wait_committed(uint64_t ticket) {
    std::unique_lock lock(mu);
    idle.wait(lock, [&] { return committed_ticket >= ticket || error; });
    if (committed_ticket < ticket) std::rethrow_exception(error);
  }

  template <class Row>
  void add(Row&& row) {
    std::unique_lock lock(mu);
    if (closed) throw Error(path + ": writer already finished");
    current->push(std::move(row));
    if (++current->rows >= options.batch_rows) enqueue_current(lock);
  }

  void flush() {
    std::unique_lock lock(mu);
    enqueue_current(lock);
    idle.wait(lock, [&] { return (queue.empty() && !in_flight) || error; });
    if (error) std::rethrow_exception(error);
  }

  void stop_thread() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    work_ready.notify_all();
    if (thread.joinable()) thread.join();
  }

  void finalize_statements() {
    insert_range.reset();
    insert_string.reset();
    inserts.clear();
  }
};

Writer::Writer(Database db, WriterOptions options)
    : impl_(std::make_unique<Impl>(std::move(db), options)) {
  impl_->path = impl_->db.path();
  // A 64 MiB page cache keeps a batch's dirty pages in memory until commit (default is 2 MiB). An
  // in-memory database's pages already live in memory: a cache in front of them would only hold
  // a second copy of every page.
  if (!impl_->db.in_memory()) impl_->db.exec("PRAGMA cache_size = -65536");
  if (options.temporary_output) {
    // No reader can see the file before AtomicOutput renames it, and a failed write discards the
    // whole file: WAL (every page written twice: WAL, then checkpoint) and syncs protect nothing.
    impl_->db.exec("PRAGMA journal_mode = OFF");
    impl_->db.exec("PRAGMA synchronous = OFF");
  }
  impl_->load_strings();
  impl_->thread = std::thread([this] { impl_->run(); });
  // Named after the writer (top, perf and the daemon benchmark tell the bulk writer's thread
  // apart by it); Linux keeps 15 characters.
  pthread_setname_np(impl_->thread.native_handle(), options.writer_name.substr(0, 15).c_str());
}

Writer::~Writer() {
  if (!impl_ || impl_->closed) return;
  // No finish() was called (typically an error is unwinding): keep what was queued, skip the
  // index build, close.
  try {
    impl_->flush();
  } catch (...) {
  }
  impl_->stop_thread();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->finalize_statements();
  impl_->db.close();
}

int64_t Writer::add_capture(const Capture& c) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->insert_one(c);
}

void Writer::update_capture(const Capture& c) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  using Io = io::TableIo<Capture>;
  Statement s = impl_->db.prepare(std::string("UPDATE ") + Io::table + " SET " + Io::update_set +
                                  " WHERE id = ?");
  Io::bind(s, 1, c, *impl_);
  s.bind(Io::insert_count + 1, c.id).execute();
}

int64_t Writer::add_host(const Host& h) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->insert_one(h);
}

int64_t Writer::add_workflow(const Workflow& w) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->insert_one(w);
}

void Writer::upsert_process(const Process& p) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  // UNIQUE (captureId, globalPid) treats NULL captures as distinct: "replace by key" for a row
  // without a capture (as schema 2 wrote them) deletes its predecessor first. IS matches NULLs.
  impl_->db.prepare("DELETE FROM processes WHERE captureId IS ? AND globalPid = ?")
      .bind(1, p.captureId)
      .bind(2, p.globalPid)
      .execute();
  impl_->insert_one(p);
}

void Writer::add_gpu(const GpuInfo& g) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->insert_one(g);
}

int64_t Writer::add_finding(const Finding& f) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->insert_one(f);
}

void Writer::delete_findings(int64_t capture_id) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->db.prepare("DELETE FROM findings WHERE captureId = ?").bind(1, capture_id).execute();
}

void Writer::set_meta(const std::string& key, const std::optional<std::string>& value) {
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  if (value)
    impl_->db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        .bind(1, key)
        .bind(2, *value)
        .execute();
  else
    impl_->db.prepare("DELETE FROM meta WHERE key = ?").bind(1, key).execute();
}

int64_t Writer::intern(const std::string& text) {
  std::lock_guard db_lock(impl_->db_mu);
  return impl_->intern_locked(text);
}

#define FLEETSCOPE_WRITER_ADD(Row, plural) \
  void Writer::add(Row row) {              \
    impl_->add(std::move(row));            \
  }
FLEETSCOPE_EVENT_ROWS(FLEETSCOPE_WRITER_ADD)
#undef FLEETSCOPE_WRITER_ADD

void RowSink::shift_times(int64_t, int64_t) {
  throw Error("this row sink cannot shift the times of rows already added");
}

void Writer::shift_times(int64_t capture_id, int64_t delta_ns) {
  if (delta_ns == 0) return;
  flush();
  std::lock_guard db_lock(impl_->db_mu);
  impl_->db.exec("BEGIN");
  try {
    // Every event table with times, the capture's rows selected by their ranges (capture_rows.h).
    shift_capture_rows(impl_->db, capture_id, delta_ns);
    impl_->db.exec("COMMIT");
  } catch (...) {
    sqlite3_exec(impl_->db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Writer::flush() {
  impl_->flush();
}

uint64_t Writer::add_rows(RowVectors& rows, size_t row_count) {
  return impl_->add_rows(rows, row_count);
}

void Writer::wait_committed(uint64_t ticket) {
  impl_->wait_committed(ticket);
}

void Writer::finish(const std::function<void()>& alongside_indexes) {
  if (impl_->closed) return;
  impl_->flush();
  impl_->stop_thread();
  std::lock_guard db_lock(impl_->db_mu);
  Database& db = impl_->db;
  db.exec("BEGIN");
  {
    Statement s = db.prepare(
        "INSERT INTO event_extent(tbl, captureId, max_duration) VALUES (?,?,?) "
        "ON CONFLICT(tbl, captureId) DO UPDATE SET max_duration = "
        "MAX(max_duration, excluded.max_duration)");
    for (const auto& [key, duration] : impl_->extents)
      s.bind(1, std::string(key.first)).bind(2, key.second).bind(3, duration).execute();
  }
  db.exec("COMMIT");
  // The other connection's statements only read: the commit below waits for the one in
  // progress instead of failing after the default timeout.
  std::exception_ptr alongside_error;
  std::thread alongside, writeback;
  if (alongside_indexes) {
    sqlite3_busy_timeout(db.raw(), INT32_MAX);
    alongside = std::thread([&] {
      try {
        alongside_indexes();
      } catch (...) {
        alongside_error = std::current_exception();
      }
    });
  }
  try {
    if (impl_->options.build_indexes) {
      // The post-load index builds are one external sort each: let SQLite's sorter use helper
      // threads (PRAGMA threads, https://sqlite.org/pragma.html#pragma_threads) so the build is
      // not serial on one core. (A sampled ANALYZE, PRAGMA analysis_limit, was tried: its
      // statistics change query plans, and with them the row order of unordered queries.) One
      // transaction for all the indexes: one exclusive lock.
      const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
      db.exec("PRAGMA threads = " + std::to_string(std::min(cores, 8u)));
      // The sorter keeps up to the page cache's size in memory before it spills runs to temporary
      // files and merges them: 128 MiB holds the largest index of a 10M-event import (3.6 M CPU
      // ops) in one run. Measured with the sqlite3 shell on that database's tables: 2.6 -> 2.1
      // CPU-s for all the indexes and ANALYZE (64 -> 128 MiB; 256 MiB gained nothing more).
      if (!db.in_memory()) db.exec("PRAGMA cache_size = -131072");
      db.exec("BEGIN");
      db.exec(index_sql());
      db.exec("COMMIT");
      // Every page but ANALYZE's is in the file now: start writing them to disk while ANALYZE
      // runs, so the owner's sync of a temporary output (AtomicOutput::commit) waits for less
      // (fsync 0.18 s -> 0.001 s at 1e7 events). On its own thread: the call itself blocks while
      // the device queue is full (0.13 s there).
      if (impl_->options.temporary_output && !db.in_memory())
        writeback = std::thread([path = impl_->path] { start_writeback(path); });
      db.exec("BEGIN");
      db.exec("ANALYZE");
      db.exec("COMMIT");
    }
  } catch (...) {
    sqlite3_exec(db.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
    if (alongside.joinable()) alongside.join();
    if (writeback.joinable()) writeback.join();
    throw;
  }
  if (alongside.joinable()) alongside.join();
  if (writeback.joinable()) writeback.join();
  if (alongside_indexes) sqlite3_busy_timeout(db.raw(), 5000);
  if (alongside_error) std::rethrow_exception(alongside_error);
  impl_->finalize_statements();
  if (!db.in_memory()) {  // an in-memory database has no WAL and no journal file to switch
    if (impl_->options.keep_wal_after_finish) {
      // A WAL file others may hold (the daemon's host database): never change its journal mode
      // (that needs every other connection gone: "database is locked") and never wait for its
      // readers and writers (a TRUNCATE checkpoint blocks new writers while it waits). A
      // PASSIVE checkpoint copies what it can without waiting; the last connection to close
      // checkpoints the rest.
      db.exec("PRAGMA wal_checkpoint(PASSIVE)");
    } else {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      db.exec("PRAGMA journal_mode = DELETE");
    }
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->closed = true;
  }
  db.close();  // the last connection closing removes -wal/-shm, so the file can be renamed
}

WriterStats Writer::stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

const std::string& Writer::path() const {
  return impl_->path;
}

}  // namespace fleetscope::store
