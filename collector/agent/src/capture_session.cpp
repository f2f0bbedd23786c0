#include "fleetscope/agent/capture_session.h"

#include <csignal>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace fleetscope::agent {
namespace {

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGABRT:
      return "SIGABRT";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

void append(std::string& note, const std::string& part) {
  if (part.empty()) return;
  note += (note.empty() ? "" : "; ") + part;
}

}  // namespace

CaptureSession::CaptureSession(ActivitySource& source, RecordSink& sink, SessionOptions options)
    : source_(source), sink_(sink), options_(std::move(options)) {}

CaptureSession::~CaptureSession() {
  try {
    if (open_) source_.disable();
  } catch (...) {
    // Destruction may run at process exit inside someone else's program: never let anything out.
  }
}

bool CaptureSession::open(int64_t now_ns) {
  if (open_) return true;
  // The source first: a window CUPTI cannot trace leaves nothing behind. Its records are handed
  // over by drain()/flush(), on this thread, so none arrives before the translator exists.
  if (!source_.enable([this](const CUpti_Activity& record) { on_record(record); })) {
    error_ = "cannot start activity tracing: " + source_.last_error();
    return false;
  }
  WindowStart start;
  start.capture.kind = options_.kind;
  start.capture.source = "fleetscope-agent";
  start.capture.source_path = options_.command;
  start.capture.start_ns = now_ns;
  start.capture.note = kPartialNote;
  start.host.hostname = options_.hostname;
  start.process.globalPid = store::global_pid(options_.pid);
  start.process.pid = options_.pid;
  start.process.command = options_.command;
  start.process.start_ns = now_ns;
  try {
    capture_ = start.capture;
    capture_.id = sink_.begin(start);
    process_ = start.process;
    process_.captureId = capture_.id;
  } catch (const std::exception& e) {
    error_ = "cannot create " + sink_.destination() + ": " + e.what();
    source_.disable();
    return false;
  }
  TranslationContext context;
  context.captureId = capture_.id;
  context.pid = options_.pid;
  context.step_names = options_.step_names;
  context.runtime_filter = options_.runtime_filter;
  context.api_name = [this](store::ApiClass api, uint32_t cbid) {
    return source_.api_name(api, cbid);
  };
  translator_ = std::make_unique<RecordTranslator>(context, sink_.rows());
  open_ = true;
  return true;
}

void CaptureSession::on_record(const CUpti_Activity& record) {
  if (!translator_) return;  // a buffer that came back before the window registered: not ours
  if (sink_failed_) {
    ++rows_lost_;
    return;
  }
  try {
    translator_->translate(record);
  } catch (const std::exception& e) {
    fail_sink(e);
    ++rows_lost_;
  }
}

void CaptureSession::fail_sink(const std::exception& e) {
  if (sink_failed_) return;
  sink_failed_ = true;
  rows_lost_ += sink_.rows_lost();  // translated and given, never stored
  error_ = "cannot write " + sink_.destination() + ": " + e.what();
}

void CaptureSession::pump() {
  if (!open_) return;
  source_.drain();
  if (sink_failed_) return;
  try {
    sink_.commit();
  } catch (const std::exception& e) {
    fail_sink(e);
  }
}

CaptureSummary CaptureSession::close(int64_t now_ns,
                                     const std::optional<ObservedStepEnd>& closing_step) {
  return finish(now_ns, true, {}, closing_step);
}

CaptureSummary CaptureSession::close_on_signal(int64_t now_ns, int signal_number) {
  return finish(now_ns, false,
                "partial: the process received " + signal_name(signal_number) +
                    " while this window was open; rows flushed until then are present",
                std::nullopt);
}

CaptureSummary CaptureSession::finish(int64_t now_ns, bool normal, const std::string& partial_why,
                                      const std::optional<ObservedStepEnd>& closing_step) {
  CaptureSummary summary;
  summary.path = sink_.destination();
  summary.capture_id = capture_.id;
  if (!open_) {
    summary.error = error_.empty() ? "the window never opened" : error_;
    return summary;
  }
  open_ = false;
  try {
    source_.flush();
  } catch (...) {
  }
  source_.disable();
  translator_->finish(closing_step);
  summary.stats = translator_->stats();
  summary.dropped_records = source_.dropped_records() + summary.stats.incomplete + rows_lost_;
  summary.collector_overhead_ns = summary.stats.overhead_ns + source_.handling_ns();

  std::string note = normal ? std::string() : partial_why;
  bool gpu_work = summary.stats.kernels + summary.stats.memcpys + summary.stats.memsets > 0;
  if (!gpu_work) append(note, "no GPU activity in this trace");
  if (source_.dropped_records() > 0)
    append(note, std::to_string(source_.dropped_records()) + " records dropped by CUPTI (" +
                     (source_.drop_reasons().empty() ? std::string("buffers full")
                                                     : source_.drop_reasons()) +
                     ")");
  if (summary.stats.incomplete > 0)
    append(note, std::to_string(summary.stats.incomplete) +
                     " incomplete records dropped (start or end not recorded; still running at "
                     "the flush)");
  if (rows_lost_ > 0)
    append(note, std::to_string(rows_lost_) + " records lost to a write error: " + error_);

  capture_.end_ns = now_ns;
  capture_.dropped_records = summary.dropped_records;
  capture_.collector_overhead_ns = summary.collector_overhead_ns;
  if (gpu_work) capture_.gpu_vendor = "nvidia";
  capture_.note = note.empty() ? std::nullopt : std::optional<std::string>(note);
  summary.note = note;
  process_.end_ns = now_ns;
  WindowEnd end;
  end.capture = capture_;
  end.process = process_;
  translator_.reset();
  try {
    if (sink_failed_) throw std::runtime_error(error_);
    if (normal) {
      if (options_.gpu_facts) {
        for (store::GpuInfo gpu : options_.gpu_facts()) {
          gpu.captureId = capture_.id;
          end.gpus.push_back(gpu);
        }
      }
      sink_.end(end);
    } else {
      sink_.end_partial(end);
    }
    summary.written = true;
    summary.complete = normal;
  } catch (const std::exception& e) {
    summary.error = sink_failed_ ? error_ : "cannot write " + sink_.destination() + ": " + e.what();
    try {
      end.capture.note = "partial: " + summary.error + (note.empty() ? "" : "; " + note);
      sink_.end_partial(end);
    } catch (...) {
    }
  }
  return summary;
}

}  // namespace fleetscope::agent
