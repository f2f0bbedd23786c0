// One tracing window from open to a finished capture: registers the capture, host and process with
// the record sink, routes the source's records through the translator into it, commits after each
// drained batch, and at close stores the dropped-record count (with why in the note) and the
// collector's overhead. Independent of CUPTI (any ActivitySource) and of the destination (any
// RecordSink), so tests drive it with the fake source and a real SQLite file.
//
// Threading: every call comes from one thread (the agent's control thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetscope/agent/activity_source.h"
#include "fleetscope/agent/record_sink.h"
#include "fleetscope/agent/record_translator.h"
#include "fleetscope/agent/runtime_filter.h"
#include "fleetscope/agent/step_names.h"
#include "fleetscope/store/rows.h"

namespace fleetscope::agent {

struct SessionOptions {
  int64_t pid = 0;
  std::string command;  // traced command line, stored as the capture's source_path
  std::string hostname;
  store::CaptureKind kind = store::CaptureKind::standalone;
  StepNames step_names;
  RuntimeFilter runtime_filter;
  // GPU facts for TARGET_INFO_GPU, read when the window closes; may be empty.
  std::function<std::vector<store::GpuInfo>()> gpu_facts;
};

struct CaptureSummary {
  bool written = false;   // the sink holds a complete (or, after a signal, a partial) capture
  bool complete = false;  // ended normally
  std::string path;
  std::string error;  // why nothing (or only part) was written
  int64_t capture_id = 0;
  TranslationStats stats;
  int64_t dropped_records = 0;  // CUPTI's + incomplete records + rows lost to a sink error
  int64_t collector_overhead_ns = 0;
  std::string note;
};

class CaptureSession {
 public:
  CaptureSession(ActivitySource& source, RecordSink& sink, SessionOptions options);
  ~CaptureSession();  // disables the source if still open; never throws
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  // Registers the capture with the sink and enables the source. False (with error()) on failure.
  bool open(int64_t now_ns);
  // Hands over the buffers completed so far and commits them to the sink.
  void pump();
  // Flushes and disables the source, writes the remaining rows and completes the capture.
  // `closing_step`: the window closed at the end of this step (an iteration window); its range is
  // ended there if the source stopped before recording its END (RecordTranslator::finish).
  CaptureSummary close(int64_t now_ns,
                       const std::optional<ObservedStepEnd>& closing_step = std::nullopt);
  // The process is being ended by signal `signal_number`: hands over what the source has,
  // commits it and marks the capture partial. Quick (no index build).
  CaptureSummary close_on_signal(int64_t now_ns, int signal_number);
  bool is_open() const { return open_; }
  const std::string& error() const { return error_; }
  int64_t rows() const { return translator_ ? translator_->stats().stored : 0; }

 private:
  void on_record(const CUpti_Activity& record);
  CaptureSummary finish(int64_t now_ns, bool normal, const std::string& partial_why,
                        const std::optional<ObservedStepEnd>& closing_step);
  void fail_sink(const std::exception& e);

  ActivitySource& source_;
  RecordSink& sink_;
  SessionOptions options_;
  std::unique_ptr<RecordTranslator> translator_;
  store::Capture capture_;
  store::Process process_;
  bool open_ = false;
  bool sink_failed_ = false;
  int64_t rows_lost_ = 0;  // translated rows the sink could not keep
  std::string error_;
};

}  // namespace fleetscope::agent
