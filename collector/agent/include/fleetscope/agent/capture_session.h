// One tracing window from open to a committed database: creates the output atomically, registers
// the capture, host, process and GPUs, routes the source's records through the translator into the
// store's writer, and at close stores the dropped-record count and the collector's overhead.
// Independent of CUPTI (any ActivitySource), so tests drive it with the fake source.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/agent/activity_source.h"
#include "fleetscope/agent/record_translator.h"
#include "fleetscope/agent/step_names.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/rows.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::agent {

struct SessionOptions {
  std::string output_path;
  int64_t pid = 0;
  std::string command;  // traced command line, stored as the capture's source_path
  std::string hostname;
  store::CaptureKind kind = store::CaptureKind::standalone;
  StepNames step_names;
  // GPU facts for TARGET_INFO_GPU, read when the window closes; may be empty.
  std::function<std::vector<store::GpuInfo>()> gpu_facts;
};

struct CaptureSummary {
  bool written = false;
  std::string path;
  std::string error;  // why nothing was written
  TranslationStats stats;
  int64_t dropped_records = 0;
  int64_t collector_overhead_ns = 0;
};

class CaptureSession {
 public:
  CaptureSession(ActivitySource& source, SessionOptions options);
  ~CaptureSession();  // discards an uncommitted output; never throws
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  // Creates the temporary database and enables the source. False (with error()) on failure, in
  // which case nothing is left on disk.
  bool open(int64_t now_ns);
  // Flushes and disables the source, writes the remaining rows and commits the file.
  CaptureSummary close(int64_t now_ns);
  bool is_open() const { return open_; }
  const std::string& error() const { return error_; }

 private:
  void on_record(const CUpti_Activity& record);

  ActivitySource& source_;
  SessionOptions options_;
  std::unique_ptr<store::AtomicOutput> output_;
  std::unique_ptr<store::Writer> writer_;
  std::unique_ptr<RowSink> sink_;
  std::unique_ptr<RecordTranslator> translator_;
  std::mutex record_mutex_;
  store::Capture capture_;
  store::Process process_;  // upserts replace the whole row, so the full row is kept
  bool open_ = false;
  std::string error_;
};

}  // namespace fleetscope::agent
