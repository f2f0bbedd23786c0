#include "kineto_input.h"

#include <zlib.h>
#ifdef FLEETSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "fleetscope/store/error.h"

namespace fleetscope::importers::kineto {

namespace {
constexpr size_t kCompressedChunk = size_t{1} << 20;
}

struct InputStream::Zlib {
  z_stream zs{};
  std::vector<unsigned char> in = std::vector<unsigned char>(kCompressedChunk);
  bool initialised = false;
  ~Zlib() {
    if (initialised) inflateEnd(&zs);
  }
};

InputStream::InputStream(std::string path, size_t whole_limit) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) throw InputError(path_, "", std::string("cannot open: ") + std::strerror(errno));
  if (std::fseek(file_, 0, SEEK_END) == 0) {
    file_bytes_ = std::ftell(file_);
    std::fseek(file_, 0, SEEK_SET);
  }
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, file_);
  if (got == 0) {
    std::fclose(file_);
    file_ = nullptr;
    throw InputError(path_, "byte 0", "empty file, expected a Kineto trace (JSON or gzip)");
  }
  gzip_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::fseek(file_, 0, SEEK_SET);
  if (gzip_) {
    if (inflate_whole(whole_limit)) return;
    std::fseek(file_, 0, SEEK_SET);
    z_ = std::make_unique<Zlib>();
    // 15 + 32: a gzip or zlib header, detected.
    if (inflateInit2(&z_->zs, 15 + 32) != Z_OK) throw Error("zlib: inflateInit2 failed");
    z_->initialised = true;
  }
}

InputStream::~InputStream() {
  if (file_) std::fclose(file_);
}

// Small gzip files: read whole, inflated by libdeflate into one buffer within `whole_limit`.
// Any failure (corrupt, truncated, larger than the limit) falls back to zlib streaming, which
// also says where the data is bad.
bool InputStream::inflate_whole(size_t whole_limit) {
#ifdef FLEETSCOPE_HAVE_LIBDEFLATE
  if (whole_limit == 0 || file_bytes_ < 18 || static_cast<uint64_t>(file_bytes_) > whole_limit)
    return false;
  std::string raw(static_cast<size_t>(file_bytes_), '\0');
  std::fseek(file_, 0, SEEK_SET);
  if (std::fread(raw.data(), 1, raw.size(), file_) != raw.size()) return false;
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  // ISIZE (last 4 bytes, mod 2^32) is the first guess of the size; the buffer grows as needed.
  const unsigned char* t = bytes + raw.size() - 4;
  size_t guess = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
  // Deflate expands at most 1032:1, so a larger ISIZE is a lie (a 143-byte file claimed 101 MB,
  // all of it allocated and zeroed; found by fuzz_kineto_json as a timeout).
  const size_t most = raw.size() * 1032 + 4096;
  if (guess < raw.size() || guess > whole_limit) guess = std::min(raw.size() * 8, whole_limit);
  guess = std::min(guess, most);
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!d) return false;
  std::string out(guess + 4096, '\0');  // room for the parser's padding: no reallocation later
  size_t in_pos = 0, produced = 0;
  for (;;) {
    size_t used_in = 0, used_out = 0;
    const auto rc = libdeflate_gzip_decompress_ex(d.get(), bytes + in_pos, raw.size() - in_pos,
                                                  out.data() + produced, out.size() - produced,
                                                  &used_in, &used_out);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
      if (out.size() >= whole_limit) return false;
      out.resize(std::min(out.size() * 2, whole_limit));  // the member is inflated again
      continue;
    }
    if (rc != LIBDEFLATE_SUCCESS) return false;
    in_pos += used_in, produced += used_out;
    // Concatenated members are one stream (gzip -c a b > c); anything else after the end is
    // ignored, as gzip does with trailing zeros.
    if (raw.size() - in_pos < 2 || bytes[in_pos] != 0x1f || bytes[in_pos + 1] != 0x8b) break;
    if (out.size() - produced < 65536) {
      if (out.size() >= whole_limit) return false;
      out.resize(std::min(out.size() * 2, whole_limit));
    }
  }
  if (produced == 0) return false;  // zlib's path reports it
  out.resize(produced);
  whole_ = std::move(out);
  use_whole_ = true;
  raw_read_ = file_bytes_;
  return true;
#else
  (void)whole_limit;
  return false;
#endif
}

int64_t InputStream::file_bytes_read() const {
  if (use_whole_) return raw_read_;
  if (!gzip_) return raw_read_;
  return raw_read_ - static_cast<int64_t>(z_->zs.avail_in);
}

void blank_byte_order_mark(char* data, size_t n) {
  if (n >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0) std::memset(data, ' ', 3);
}

size_t InputStream::read(char* dst, size_t capacity) {
  const bool first = !started_;
  const size_t n = read_raw(dst, capacity);
  if (first && n > 0) {
    started_ = true;
    blank_byte_order_mark(dst, n);
  }
  return n;
}

size_t InputStream::read_raw(char* dst, size_t capacity) {
  if (finished_ || capacity == 0) return 0;
  if (use_whole_) {
    const size_t n = std::min(capacity, whole_.size() - whole_pos_);
    std::memcpy(dst, whole_.data() + whole_pos_, n);
    whole_pos_ += n;
    if (n == 0) {
      finished_ = true;
      std::string().swap(whole_);
    }
    return n;
  }
  if (gzip_) return read_gzip(dst, capacity);
  const size_t n = std::fread(dst, 1, capacity, file_);
  if (n == 0) {
    if (std::ferror(file_)) throw InputError(path_, "", "read error");
    finished_ = true;
  }
  raw_read_ += static_cast<int64_t>(n);
  produced_ += static_cast<int64_t>(n);
  return n;
}

size_t InputStream::read_gzip(char* dst, size_t capacity) {
  z_stream& zs = z_->zs;
  size_t produced = 0;
  while (produced < capacity) {
    if (zs.avail_in == 0) {
      const size_t n = std::fread(z_->in.data(), 1, z_->in.size(), file_);
      if (n == 0 && std::ferror(file_)) throw InputError(path_, "", "read error");
      raw_read_ += static_cast<int64_t>(n);
      zs.next_in = z_->in.data();
      zs.avail_in = static_cast<uInt>(n);
    }
    zs.next_out = reinterpret_cast<Bytef*>(dst + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(capacity - produced, 1u << 30));
    const uInt before = zs.avail_out;
    const bool input_ended = zs.avail_in == 0;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    produced_ += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members are one stream (gzip -c a b > c); anything else after the end
      // is ignored, as gzip itself does with trailing zeros.
      if (zs.avail_in == 0) {
        const size_t n = std::fread(z_->in.data(), 1, z_->in.size(), file_);
        raw_read_ += static_cast<int64_t>(n);
        zs.next_in = z_->in.data();
        zs.avail_in = static_cast<uInt>(n);
      }
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        member_base_ += static_cast<int64_t>(zs.total_in);
        inflateReset(&zs);
        continue;
      }
      finished_ = true;
      if (produced_ == 0) throw InputError(path_, "byte 0", "gzip stream decompresses to nothing");
      return produced;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && input_ended) {
      throw InputError(path_,
                       "byte " + std::to_string(member_base_ + static_cast<int64_t>(zs.total_in)) +
                           " of compressed input",
                       "truncated gzip stream (input ended after " + std::to_string(produced_) +
                           " decompressed bytes, expected more data and the gzip trailer)");
    }
    if (rc == Z_BUF_ERROR) continue;
    const std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
    throw InputError(path_,
                     "byte " + std::to_string(member_base_ + static_cast<int64_t>(zs.total_in)) +
                         " of compressed input",
                     "corrupt gzip data (" + msg + ")");
  }
  return produced;
}

}  // namespace fleetscope::importers::kineto
