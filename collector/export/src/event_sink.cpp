#include "fleetscope/export/event_sink.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fleetscope/common/new_file.h"
#include "fleetscope/store/error.h"

namespace fleetscope::exporter {
namespace {

// Events are appended to this buffer and written out when it passes the threshold: big enough to
// make write/gzwrite calls cheap, small enough that memory stays flat however large the trace.
constexpr size_t kBufferBytes = 1 << 20;

}  // namespace

void JsonArraySink::write_event(std::string_view event) {
  body_ += events_written_ == 0 ? "\n" : ",\n";
  body_ += event;
  ++events_written_;
}

std::string JsonArraySink::finish() const {
  return "[" + body_ + (body_.empty() ? "]" : "\n]");
}

// The open file: plain stdio or a zlib gzip stream.
struct ChromeTraceFile::Output {
  std::FILE* plain = nullptr;
  gzFile compressed = nullptr;

  ~Output() {
    if (plain) std::fclose(plain);
    if (compressed) gzclose(compressed);
  }
};

ChromeTraceFile::ChromeTraceFile(const std::string& path, bool gzip, int gzip_level)
    : path_(path), output_(std::make_unique<Output>()) {
  // A new file, never through a link planted under the temporary name (common/new_file.h).
  const int fd = common::create_new_file(path);
  if (fd < 0) throw Error(path + ": cannot create output file: " + std::strerror(errno));
  if (gzip) {
    const std::string mode =
        "wb" + std::to_string(gzip_level < 0 || gzip_level > 9 ? 6 : gzip_level);
    output_->compressed = gzdopen(fd, mode.c_str());
    if (output_->compressed) gzbuffer(output_->compressed, 256 * 1024);
  } else {
    output_->plain = ::fdopen(fd, "wb");
  }
  if (!output_->plain && !output_->compressed) {
    const int error = errno;
    ::close(fd);
    throw Error(path + ": cannot create output file: " + std::strerror(error));
  }
  buffer_.reserve(kBufferBytes + 64 * 1024);
}

ChromeTraceFile::~ChromeTraceFile() = default;

void ChromeTraceFile::flush_buffer() {
  if (buffer_.empty()) return;
  bool ok = false;
  if (output_->plain) {
    ok = std::fwrite(buffer_.data(), 1, buffer_.size(), output_->plain) == buffer_.size();
  } else {
    ok = gzwrite(output_->compressed, buffer_.data(), static_cast<unsigned>(buffer_.size())) ==
         static_cast<int>(buffer_.size());
  }
  if (!ok) throw Error(path_ + ": write failed: " + std::strerror(errno));
  bytes_written_ += static_cast<int64_t>(buffer_.size());
  buffer_.clear();
}

void ChromeTraceFile::write_raw(std::string_view text) {
  buffer_ += text;
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void ChromeTraceFile::begin_events() {
  write_raw("\"traceEvents\": [");
}

void ChromeTraceFile::write_event(std::string_view event) {
  buffer_ += events_written_ == 0 ? "\n" : ",\n";
  buffer_ += event;
  ++events_written_;
  if (buffer_.size() >= kBufferBytes) flush_buffer();
}

void ChromeTraceFile::finish(std::string_view trailer) {
  if (finished_) return;
  buffer_ += "\n]";
  buffer_ += trailer;
  buffer_ += "\n}\n";
  flush_buffer();
  finished_ = true;
  int status = 0;
  if (output_->plain) {
    status = std::fclose(output_->plain);
    output_->plain = nullptr;
  } else {
    status = gzclose(output_->compressed) == Z_OK ? 0 : -1;
    output_->compressed = nullptr;
  }
  if (status != 0) throw Error(path_ + ": closing the output failed: " + std::strerror(errno));
}

}  // namespace fleetscope::exporter
