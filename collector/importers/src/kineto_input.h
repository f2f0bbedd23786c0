// Kineto importer input: the bytes of a trace file, read in pieces, gunzipped on the fly when the
// file starts with the gzip magic. Memory use is the caller's buffer plus a fixed 1 MiB of
// compressed input, whatever the file size (the whole-file buffer this replaced held the
// decompressed document, 4.3 GB for a 1e7-event trace).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace fleetscope::importers::kineto {

// Three spaces for a UTF-8 byte order mark at the start of `data` (of `n` bytes).
void blank_byte_order_mark(char* data, size_t n);

class InputStream {
 public:
  // Opens `path`; throws InputError when it cannot be opened or is empty. A gzip file whose
  // decompressed size is at most `whole_limit` bytes is inflated in one call by libdeflate (about
  // twice zlib's speed; it cannot stream) when the build has it; larger ones stream through zlib.
  explicit InputStream(std::string path, size_t whole_limit = 0);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Reads up to `capacity` bytes of the (decompressed) document into `dst`; returns 0 at the end.
  // A UTF-8 byte order mark at the start (RFC 8259 section 8.1 lets a parser ignore it; Windows
  // editors and Python's "utf-8-sig" write one) is read as three spaces: the document parses, and
  // every byte offset in an error is still the file's.
  // Throws InputError naming the file and the compressed byte offset for truncated or corrupt
  // gzip data, and when a gzip file decompresses to nothing.
  size_t read(char* dst, size_t capacity);

  bool gzip() const { return gzip_; }
  // Gzip inflated whole: hands its buffer over (sized to the document, with `padding` zero bytes
  // after it) instead of copying it through read(); false otherwise.
  bool take_whole(std::string& out, size_t padding) {
    if (!use_whole_ || whole_pos_ != 0) return false;
    const size_t n = whole_.size();
    blank_byte_order_mark(whole_.data(), n);
    whole_.resize(n + padding, '\0');
    out = std::move(whole_);
    whole_pos_ = n;
    finished_ = true;
    return true;
  }
  // The decompressed size when known before reading (uncompressed files, gzip inflated whole).
  std::optional<int64_t> known_size() const {
    if (use_whole_) return static_cast<int64_t>(whole_.size());
    if (!gzip_) return file_bytes_;
    return std::nullopt;
  }
  int64_t file_bytes() const { return file_bytes_; }
  // Bytes of the file consumed so far (compressed bytes for gzip), for progress reports.
  int64_t file_bytes_read() const;
  const std::string& path() const { return path_; }

 private:
  size_t read_raw(char* dst, size_t capacity);
  size_t read_gzip(char* dst, size_t capacity);
  bool inflate_whole(size_t whole_limit);

  std::string whole_;  // the whole decompressed document (small gzip files), served by read()
  size_t whole_pos_ = 0;
  bool use_whole_ = false;

  std::string path_;
  std::FILE* file_ = nullptr;
  int64_t file_bytes_ = 0;
  int64_t raw_read_ = 0;
  int64_t produced_ = 0;
  int64_t member_base_ = 0;  // compressed offset of the current gzip member
  bool gzip_ = false;
  bool finished_ = false;
  bool started_ = false;  // the first bytes were read (and a byte order mark blanked)
  struct Zlib;
  std::unique_ptr<Zlib> z_;
};

}  // namespace fleetscope::importers::kineto
