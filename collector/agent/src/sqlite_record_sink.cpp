#include "fleetscope/agent/sqlite_record_sink.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"

namespace fleetscope::agent {
namespace {

void sync_file(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Counts the rows on their way to the writer, so that a failed write knows how many it lost.
class CountingSink final : public store::UniformEventSink<CountingSink> {
 public:
  CountingSink(RowSink& next, int64_t& count) : next_(next), count_(count) {}
  template <class Row>
  void put(Row&& row) {
    ++count_;
    next_.add(std::forward<Row>(row));
  }

 private:
  RowSink& next_;
  int64_t& count_;
};

}  // namespace

std::string rename_without_replacing(const std::string& from, const std::string& wanted) {
  std::filesystem::path path(wanted);
  std::string stem = (path.parent_path() / path.stem()).string();
  std::string ext = path.extension().string();
  for (int n = 1; n < 1000; ++n) {
    std::string name = n == 1 ? wanted : stem + "-" + std::to_string(n) + ext;
    // RENAME_NOREPLACE: atomic, and never over another process's file (glibc 2.28, Linux 3.15).
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, name.c_str(), RENAME_NOREPLACE) == 0)
      return name;
    if (errno == EEXIST) continue;
    if (errno == EINVAL || errno == ENOSYS) {
      // A file system without RENAME_NOREPLACE: link() also refuses to replace.
      if (::link(from.c_str(), name.c_str()) == 0) {
        ::unlink(from.c_str());
        return name;
      }
      if (errno == EEXIST) continue;
    }
    throw Error(wanted + ": cannot move the new trace into place: " + std::strerror(errno));
  }
  throw Error(wanted + ": every name up to -999 is taken");
}

SqliteRecordSink::SqliteRecordSink(std::string path) : wanted_(std::move(path)) {}

SqliteRecordSink::~SqliteRecordSink() {
  try {
    rows_.reset();
    writer_rows_.reset();
    writer_.reset();  // commits what was queued, closes; the capture stays marked partial
  } catch (...) {
  }
}

void SqliteRecordSink::create_file() {
  // Schema in a temporary file, moved into place before any row: the final name never shows a
  // half-created database.
  // Replace::no: an existing file is never replaced (rename_without_replacing picks a free name).
  store::AtomicOutput temp(wanted_, store::AtomicOutput::Replace::no);
  {
    store::Database db = store::Database::create(temp.temp_path());
    // Rollback journal instead of WAL: between commits the trace is one self-contained file, so a
    // job killed by a signal leaves nothing beside it.
    db.exec("PRAGMA journal_mode = DELETE");
    db.close();
  }
  path_ = rename_without_replacing(temp.temp_path(), wanted_);  // temp then removes nothing
}

void SqliteRecordSink::open_writer() {
  store::Database db = store::Database::open(path_, store::OpenMode::read_write);
  db.exec("PRAGMA journal_mode = DELETE");
  // Each commit reaches the operating system, which keeps it when the process dies; syncing to
  // the disk happens once, at end().
  db.exec("PRAGMA synchronous = OFF");
  store::WriterOptions options;
  options.writer_name = "fleetscope-agent";
  // Small batches: a batch is the unit that survives a kill.
  options.batch_rows = 8192;
  writer_ = std::make_unique<store::Writer>(std::move(db), options);
  writer_rows_ = std::make_unique<WriterSink>(*writer_);
  given_ = 0;
  rows_ = std::make_unique<CountingSink>(*writer_rows_, given_);
}

int64_t SqliteRecordSink::rows_lost() const {
  if (!writer_) return 0;
  return std::max<int64_t>(0, given_ - writer_->stats().rows_written);
}

int64_t SqliteRecordSink::begin(const WindowStart& start) {
  if (writer_) throw Error(destination() + ": a window is already being written");
  if (path_.empty()) create_file();
  open_writer();
  if (!host_id_) host_id_ = writer_->add_host(start.host);
  const int64_t capture_id = writer_->add_capture(start.capture);
  store::Process process = start.process;
  process.captureId = capture_id;
  process.host_id = *host_id_;
  writer_->upsert_process(process);
  return capture_id;
}

RowSink& SqliteRecordSink::rows() {
  if (!rows_) throw Error(destination() + ": no window is open");
  return *rows_;
}

void SqliteRecordSink::commit() {
  if (writer_) writer_->flush();
}

void SqliteRecordSink::end(const WindowEnd& end) {
  if (!writer_) throw Error(destination() + ": no window is open");
  writer_->update_capture(end.capture);
  for (const store::GpuInfo& gpu : end.gpus) writer_->add_gpu(gpu);
  store::Process process = end.process;
  process.host_id = host_id_;
  writer_->upsert_process(process);
  rows_.reset();
  writer_rows_.reset();
  writer_->finish();  // event extents, indexes, ANALYZE, close
  writer_.reset();
  sync_file(path_, O_RDONLY);
}

void SqliteRecordSink::end_partial(const WindowEnd& end) {
  if (!writer_) return;
  writer_->update_capture(end.capture);  // flushes the queued rows first
  store::Process process = end.process;
  process.host_id = host_id_;
  writer_->upsert_process(process);
  rows_.reset();
  writer_rows_.reset();
  writer_.reset();  // no index build: closes right away
}

}  // namespace fleetscope::agent
