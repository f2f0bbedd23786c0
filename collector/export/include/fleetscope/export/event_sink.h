// Where Chrome-trace events go: a streamed file (ChromeTraceFile) or an in-memory JSON array
// (JsonArraySink, for callers that embed events in a larger document, like the analyzer's reports).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fleetscope::exporter {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // `event` is one complete JSON object ("{...}"); the sink adds the separators.
  virtual void write_event(std::string_view event) = 0;
  int64_t events_written() const { return events_written_; }

 protected:
  int64_t events_written_ = 0;
};

// Collects events into the text of a JSON array ("[\n{...},\n{...}\n]").
class JsonArraySink : public EventSink {
 public:
  void write_event(std::string_view event) override;
  std::string finish() const;  // the array text

 private:
  std::string body_;
};

// A Chrome-trace JSON file written front to back through a fixed-size buffer, gzip-compressed when
// asked. The caller writes the header fields, then events, then finish() closes the array and the
// object. Errors (disk full, ...) throw fleetscope::Error naming the path.
class ChromeTraceFile : public EventSink {
 public:
  ChromeTraceFile(const std::string& path, bool gzip, int gzip_level = 6);
  ~ChromeTraceFile() override;
  ChromeTraceFile(const ChromeTraceFile&) = delete;
  ChromeTraceFile& operator=(const ChromeTraceFile&) = delete;

  // Raw text before "traceEvents" (top-level fields, each ending with ",\n").
  void write_raw(std::string_view text);
  void begin_events();  // writes "\"traceEvents\": ["
  void write_event(std::string_view event) override;
  // Closes the events array, appends `trailer` (more top-level fields, each starting with ",\n")
  // and the closing brace, then flushes and closes the file.
  void finish(std::string_view trailer = {});
  int64_t bytes_written() const { return bytes_written_; }

 private:
  struct Output;
  void flush_buffer();

  std::string path_;
  std::unique_ptr<Output> output_;
  std::string buffer_;
  int64_t bytes_written_ = 0;
  bool finished_ = false;
};

}  // namespace fleetscope::exporter
