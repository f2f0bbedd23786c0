// The standalone destination of a process's windows: one SQLite file per process (every window is
// one capture in it), written through store::Writer and committed batch by batch.
//
// Durability: the file is created under a temporary name, gets its schema and moves to its final
// name before the first row (never over an existing file: a name taken by another process gets
// "-2", "-3", ...). From then on every commit() is one SQLite transaction in rollback-journal
// mode, so the file on disk is always a consistent database whose open capture is marked partial
// (kPartialNote) until end() completes it. A process killed between commits leaves a file that
// passes PRAGMA integrity_check; one killed inside a commit leaves a hot journal that SQLite rolls
// back on the next read-write open. Syncs (fsync) happen once at end(): the file survives the
// process dying, not the host losing power mid-window.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fleetscope/agent/record_sink.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::agent {

class SqliteRecordSink final : public RecordSink {
 public:
  // `path`: the final file name wanted (the pid already substituted).
  explicit SqliteRecordSink(std::string path);
  ~SqliteRecordSink() override;

  int64_t begin(const WindowStart& start) override;
  RowSink& rows() override;
  void commit() override;
  void end(const WindowEnd& end) override;
  void end_partial(const WindowEnd& end) override;
  std::string destination() const override { return path_; }

 private:
  void create_file();
  void open_writer();

  std::string wanted_;
  std::string path_;  // final name once created
  std::optional<int64_t> host_id_;
  std::unique_ptr<store::Writer> writer_;
  std::unique_ptr<WriterSink> rows_;
};

// Moves `from` to `wanted`, or to "stem-2.ext", "stem-3.ext", ... if that name exists; never
// replaces a file. Returns the name used; throws fleetscope::Error on failure.
std::string rename_without_replacing(const std::string& from, const std::string& wanted);

}  // namespace fleetscope::agent
