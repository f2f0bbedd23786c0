#include "fleetscope/agent/capture_session.h"

#include <exception>

#include "fleetscope/agent/row_sink.h"

namespace fleetscope::agent {

CaptureSession::CaptureSession(ActivitySource& source, SessionOptions options)
    : source_(source), options_(std::move(options)) {}

CaptureSession::~CaptureSession() {
  try {
    if (open_) source_.disable();
    translator_.reset();
    sink_.reset();
    writer_.reset();
    output_.reset();  // removes the temporary file when close() did not commit
  } catch (...) {
    // Destruction runs at process exit inside someone else's program: never let anything out.
  }
}

bool CaptureSession::open(int64_t now_ns) {
  if (open_) return true;
  try {
    output_ = std::make_unique<store::AtomicOutput>(options_.output_path);
    store::WriterOptions writer_options;
    writer_options.writer_name = "fleetscope-agent";
    writer_options.temporary_output = true;  // AtomicOutput syncs once at commit
    writer_ = std::make_unique<store::Writer>(store::Database::create(output_->temp_path()),
                                              writer_options);
    capture_.kind = options_.kind;
    capture_.source = "fleetscope-agent";
    capture_.source_path = options_.command;
    capture_.start_ns = now_ns;
    capture_.id = writer_->add_capture(capture_);

    store::Host host;
    host.hostname = options_.hostname;
    int64_t host_id = writer_->add_host(host);
    process_.globalPid = store::global_pid(options_.pid);
    process_.pid = options_.pid;
    process_.host_id = host_id;
    process_.command = options_.command;
    process_.start_ns = now_ns;
    writer_->upsert_process(process_);

    sink_ = std::make_unique<WriterSink>(*writer_);
    TranslationContext context;
    context.captureId = capture_.id;
    context.pid = options_.pid;
    context.step_names = options_.step_names;
    context.api_name = [this](store::ApiClass api, uint32_t cbid) {
      return source_.api_name(api, cbid);
    };
    translator_ = std::make_unique<RecordTranslator>(context, *sink_);
  } catch (const std::exception& e) {
    error_ = std::string("cannot create ") + options_.output_path + ": " + e.what();
    translator_.reset();
    sink_.reset();
    writer_.reset();
    output_.reset();
    return false;
  }
  if (!source_.enable([this](const CUpti_Activity& record) { on_record(record); })) {
    error_ = "cannot start activity tracing: " + source_.last_error();
    translator_.reset();
    sink_.reset();
    writer_.reset();
    output_.reset();
    return false;
  }
  open_ = true;
  return true;
}

void CaptureSession::on_record(const CUpti_Activity& record) {
  std::lock_guard lock(record_mutex_);
  if (translator_) translator_->translate(record);
}

CaptureSummary CaptureSession::close(int64_t now_ns) {
  CaptureSummary summary;
  summary.path = options_.output_path;
  if (!open_) {
    summary.error = error_.empty() ? "the window never opened" : error_;
    return summary;
  }
  open_ = false;
  try {
    source_.flush();
    source_.disable();
    std::lock_guard lock(record_mutex_);
    translator_->finish();
    summary.stats = translator_->stats();
    summary.dropped_records = source_.dropped_records();
    summary.collector_overhead_ns = summary.stats.overhead_ns + source_.handling_ns();

    capture_.end_ns = now_ns;
    capture_.dropped_records = summary.dropped_records;
    capture_.collector_overhead_ns = summary.collector_overhead_ns;
    bool gpu_work = summary.stats.kernels + summary.stats.memcpys + summary.stats.memsets > 0;
    if (gpu_work)
      capture_.gpu_vendor = "nvidia";
    else
      capture_.note = "no GPU activity in this trace";
    writer_->update_capture(capture_);

    if (options_.gpu_facts) {
      for (store::GpuInfo gpu : options_.gpu_facts()) {
        gpu.captureId = capture_.id;
        writer_->add_gpu(gpu);
      }
    }
    process_.end_ns = now_ns;
    writer_->upsert_process(process_);

    translator_.reset();
    sink_.reset();
    writer_->finish();
    writer_.reset();  // closes the connection so the WAL is folded into the file before rename
    output_->commit();
    summary.written = true;
  } catch (const std::exception& e) {
    summary.error = std::string("cannot write ") + options_.output_path + ": " + e.what();
    translator_.reset();
    sink_.reset();
    writer_.reset();
    output_.reset();
  }
  return summary;
}

}  // namespace fleetscope::agent
