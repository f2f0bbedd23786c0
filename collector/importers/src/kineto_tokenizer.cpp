#include "kineto_tokenizer.h"

#include <zlib.h>
#ifdef FLEETSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <simdjson.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "fleetscope/store/error.h"

namespace fleetscope::importers::kineto {

namespace od = simdjson::ondemand;

// ---------------------------------------------------------------------------------------------
// Input: whole file, gunzipped when needed, into a buffer with simdjson padding.

namespace {

std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string data;
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    if (size > 0) data.reserve(static_cast<size_t>(size) + simdjson::SIMDJSON_PADDING);
    std::fseek(f, 0, SEEK_SET);
  }
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) data.append(chunk, n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw InputError(path, "", "read error");
  return data;
}

#ifdef FLEETSCOPE_HAVE_LIBDEFLATE
// The whole gzip input (all members, as gzip -c a b > c writes them) into `out` starting at 0,
// growing it as needed and keeping SIMDJSON_PADDING spare bytes; the decompressed size, or nullopt
// when libdeflate rejects the data (truncated or corrupt: it does not say which, zlib does).
// libdeflate inflates a member in one call, without zlib's streaming state: about twice as fast.
std::optional<size_t> inflate_whole(const unsigned char* bytes, size_t size, std::string& out) {
  std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  if (!d) throw Error("libdeflate: out of memory");
  size_t in_pos = 0, produced = 0;
  for (;;) {
    size_t used_in = 0, used_out = 0;
    const auto rc = libdeflate_gzip_decompress_ex(
        d.get(), bytes + in_pos, size - in_pos, out.data() + produced,
        out.size() - produced - simdjson::SIMDJSON_PADDING, &used_in, &used_out);
    if (rc == LIBDEFLATE_INSUFFICIENT_SPACE) {
      out.resize(out.size() * 2);  // the member is decompressed again from its start
      continue;
    }
    if (rc != LIBDEFLATE_SUCCESS) return std::nullopt;
    in_pos += used_in, produced += used_out;
    if (size - in_pos < 2 || bytes[in_pos] != 0x1f || bytes[in_pos + 1] != 0x8b) return produced;
    if (out.size() - produced < simdjson::SIMDJSON_PADDING + 65536) out.resize(out.size() * 2);
  }
}
#endif

}  // namespace

InputBuffer read_input(const std::string& path) {
  InputBuffer in;
  std::string raw = read_file(path);
  in.file_bytes = static_cast<int64_t>(raw.size());
  if (raw.empty())
    throw InputError(path, "byte 0", "empty file, expected a Kineto trace (JSON or gzip)");
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  if (raw.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    in.gzip = true;
    // ISIZE (last 4 bytes, mod 2^32) is a good first guess of the decompressed size.
    size_t guess = raw.size() * 8;
    if (raw.size() >= 18) {
      const unsigned char* t = bytes + raw.size() - 4;
      size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
      // Only trust it when plausible (a truncated file ends in arbitrary bytes): deflate expands
      // at most ~1032:1, and the first allocation is capped; the buffer grows as needed anyway.
      if (isize >= raw.size() && isize <= raw.size() * 1032)
        guess = std::min<size_t>(isize + 1, size_t{1} << 30);
    }
    std::string out;
    out.resize(guess + simdjson::SIMDJSON_PADDING);
#ifdef FLEETSCOPE_HAVE_LIBDEFLATE
    if (const auto produced = inflate_whole(bytes, raw.size(), out)) {
      out.resize(*produced + simdjson::SIMDJSON_PADDING);
      std::memset(out.data() + *produced, 0, simdjson::SIMDJSON_PADDING);
      in.data = std::move(out);
      in.size = *produced;
      if (*produced == 0) throw InputError(path, "byte 0", "gzip stream decompresses to nothing");
      return in;
    }
    // Bad data: zlib below says where and whether the stream is truncated or corrupt.
#endif
    z_stream zs{};
    if (inflateInit2(&zs, 15 + 32) != Z_OK) throw Error("zlib: inflateInit2 failed");
    zs.next_in = const_cast<Bytef*>(bytes);
    zs.avail_in = static_cast<uInt>(raw.size());
    size_t produced = 0;
    for (;;) {
      if (out.size() - produced < simdjson::SIMDJSON_PADDING + 65536) out.resize(out.size() * 2);
      size_t room = out.size() - produced - simdjson::SIMDJSON_PADDING;
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
      zs.avail_out = static_cast<uInt>(std::min<size_t>(room, 1u << 30));
      uInt before = zs.avail_out;
      int rc = inflate(&zs, Z_NO_FLUSH);
      produced += before - zs.avail_out;
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members are one stream (gzip -c a b > c); anything else after the
        // end is ignored like gzip itself does with trailing zeros.
        if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
          inflateReset(&zs);
          continue;
        }
        break;
      }
      if (rc == Z_OK) continue;
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
        std::string where = "byte " + std::to_string(zs.total_in) + " of compressed input";
        inflateEnd(&zs);
        throw InputError(path, where,
                         "truncated gzip stream (input ended after " + std::to_string(produced) +
                             " decompressed bytes, expected more data and the gzip trailer)");
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more output room
      std::string where = "byte " + std::to_string(zs.total_in) + " of compressed input";
      std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      throw InputError(path, where, "corrupt gzip data (" + msg + ")");
    }
    inflateEnd(&zs);
    out.resize(produced + simdjson::SIMDJSON_PADDING);
    std::memset(out.data() + produced, 0, simdjson::SIMDJSON_PADDING);
    in.data = std::move(out);
    in.size = produced;
    if (produced == 0) throw InputError(path, "byte 0", "gzip stream decompresses to nothing");
  } else {
    in.size = raw.size();
    raw.resize(raw.size() + simdjson::SIMDJSON_PADDING, '\0');
    in.data = std::move(raw);
  }
  return in;
}

// ---------------------------------------------------------------------------------------------
// Numbers.

std::optional<int64_t> micros_text_to_ns(std::string_view text) {
  size_t i = 0, n = text.size();
  while (n > 0 &&
         (text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == '\t'))
    --n;
  bool neg = false;
  if (i < n && text[i] == '-') {
    neg = true;
    ++i;
  }
  if (i >= n || text[i] < '0' || text[i] > '9') return std::nullopt;
  constexpr uint64_t kMaxWhole = (static_cast<uint64_t>(INT64_MAX) - 1000) / 1000;
  uint64_t whole = 0;
  for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) {
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    if (whole > kMaxWhole) return std::nullopt;
  }
  int64_t frac = 0;
  int taken = 0;
  bool round_up = false, rounding_seen = false;
  if (i < n && text[i] == '.') {
    ++i;
    for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (taken < 3) {
        frac = frac * 10 + (text[i] - '0');
        ++taken;
      } else if (!rounding_seen) {
        round_up = text[i] >= '5';
        rounding_seen = true;
      }
    }
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    // Exponent form: rare in traces; go through a double.
    std::string copy(text.substr(0, n));
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (!end || *end != '\0' || !std::isfinite(v)) return std::nullopt;
    double ns = v * 1000.0;
    if (std::fabs(ns) > 9.2e18) return std::nullopt;
    return static_cast<int64_t>(std::llround(ns));
  }
  if (i != n) return std::nullopt;
  for (; taken < 3; ++taken) frac *= 10;
  int64_t ns = static_cast<int64_t>(whole) * 1000 + frac + (round_up ? 1 : 0);
  return neg ? -ns : ns;
}

namespace {

bool parse_number_text(std::string_view t, ArgValue& out) {
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  // Fast path for the common case (ids, sizes, counts): up to 18 plain digits, which cannot
  // overflow int64; anything else takes the general route below.
  if (!t.empty() && t.size() <= 18) {
    size_t i = t[0] == '-' ? 1 : 0;
    if (i < t.size()) {
      int64_t v = 0;
      for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) v = v * 10 + (t[i] - '0');
      if (i == t.size()) {
        out.kind = ArgValue::Kind::integer;
        out.i = t[0] == '-' ? -v : v;
        return true;
      }
    }
  }
  bool real = t.find_first_of(".eE") != std::string_view::npos;
  if (!real) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc() && p == t.data() + t.size()) {
      out.kind = ArgValue::Kind::integer;
      out.i = v;
      return true;
    }
  }
  double d = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
  if (ec != std::errc() || p != t.data() + t.size()) return false;
  out.kind = ArgValue::Kind::real;
  out.d = d;
  return true;
}

const char* type_name(od::json_type t) {
  switch (t) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "a boolean";
    case od::json_type::null:
      return "null";
  }
  return "a value";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tokenizer.

struct Tokenizer::Impl {
  od::parser parser;
  const char* base = nullptr;
  // The document of the first pass; the second pass rewinds it instead of iterating again, so
  // stage 1 (the SIMD structural index of the whole input) runs once.
  od::document doc;
  bool iterated = false;

  // Stage 1 on the first call, a rewind afterwards.
  simdjson::error_code iterate(const InputBuffer& input) {
    if (iterated) {
      doc.rewind();
      return simdjson::SUCCESS;
    }
    auto err =
        parser
            .iterate(simdjson::padded_string_view(input.data.data(), input.size, input.data.size()))
            .get(doc);
    iterated = !err;
    return err;
  }
};

Tokenizer::Tokenizer(std::string path, const InputBuffer& input)
    : path_(std::move(path)), input_(input), impl_(new Impl) {
  impl_->base = input_.data.data();
}

Tokenizer::~Tokenizer() {
  delete impl_;
}

std::string Tokenizer::position(size_t offset) const {
  offset = std::min(offset, input_.size);
  size_t line =
      1 + static_cast<size_t>(std::count(input_.data.data(), input_.data.data() + offset, '\n'));
  return "byte " + std::to_string(offset) + " (line " + std::to_string(line) + ")";
}

void Tokenizer::fail(size_t offset, const std::string& what) const {
  throw InputError(path_, position(offset), what);
}

namespace {

// Where the iterator stands, for error messages (end of input when the iterator is past it).
template <class T>
size_t location_of(T& iterable, const char* base, size_t size) {
  const char* loc = nullptr;
  if (iterable.current_location().get(loc) == simdjson::SUCCESS && loc)
    return static_cast<size_t>(loc - base);
  return size;
}

}  // namespace

#define FS_JSON_FAIL(where, err) \
  fail(where, std::string("invalid JSON: ") + simdjson::error_message(err))

TraceMeta Tokenizer::read_metadata() {
  TraceMeta meta;
  const size_t size = input_.size;
  od::document& doc = impl_->doc;
  auto err = impl_->iterate(input_);
  if (err) FS_JSON_FAIL(0, err);
  od::json_type root_type;
  if ((err = doc.type().get(root_type))) FS_JSON_FAIL(location_of(doc, impl_->base, size), err);
  if (root_type == od::json_type::array) {
    meta.events_is_root_array = true;
    return meta;
  }
  if (root_type != od::json_type::object)
    fail(0, std::string("the document is ") + type_name(root_type) +
                ", expected a JSON object with a \"traceEvents\" array");
  od::object root;
  if ((err = doc.get_object().get(root))) FS_JSON_FAIL(location_of(doc, impl_->base, size), err);
  bool saw_events = false;
  auto expect = [&](od::value& v, od::json_type want, std::string_view key) {
    od::json_type t;
    if (auto e = v.type().get(t)) FS_JSON_FAIL(location_of(v, impl_->base, size), e);
    if (t != want)
      fail(location_of(v, impl_->base, size), "field \"" + std::string(key) + "\" is " +
                                                  type_name(t) + ", expected " + type_name(want));
  };
  auto read_int = [&](od::value& v, std::string_view key) -> std::optional<int64_t> {
    od::json_type t;
    if (auto e = v.type().get(t)) FS_JSON_FAIL(location_of(v, impl_->base, size), e);
    if (t == od::json_type::null) return std::nullopt;
    if (t != od::json_type::number)
      fail(location_of(v, impl_->base, size),
           "field \"" + std::string(key) + "\" is " + type_name(t) + ", expected a number");
    std::string_view tok;
    tok = v.raw_json_token();
    ArgValue a;
    if (!parse_number_text(tok, a))
      fail(location_of(v, impl_->base, size), "bad number in \"" + std::string(key) + "\"");
    return a.as_int();
  };
  for (auto field_res : root) {
    od::field field;
    if ((err = std::move(field_res).get(field)))
      FS_JSON_FAIL(location_of(doc, impl_->base, size), err);
    std::string_view key;
    key = field.unescaped_key();
    od::value v = field.value();
    if (key == "traceEvents") {
      expect(v, od::json_type::array, key);
      saw_events = true;  // walked in pass 2; skipped here
    } else if (key == "deviceProperties" || key == "computeProperties") {
      meta.has_device_properties = true;
      expect(v, od::json_type::array, key);
      od::array arr;
      if ((err = v.get_array().get(arr))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
      for (auto dev_res : arr) {
        od::value dv;
        if ((err = std::move(dev_res).get(dv)))
          FS_JSON_FAIL(location_of(doc, impl_->base, size), err);
        expect(dv, od::json_type::object, std::string(key) + "[]");
        od::object dobj;
        if ((err = dv.get_object().get(dobj)))
          FS_JSON_FAIL(location_of(dv, impl_->base, size), err);
        store::GpuInfo gpu;
        std::optional<int64_t> threads_per_sm;
        for (auto df_res : dobj) {
          od::field df;
          if ((err = std::move(df_res).get(df)))
            FS_JSON_FAIL(location_of(dv, impl_->base, size), err);
          std::string_view dk;
          dk = df.unescaped_key();
          od::value x = df.value();
          if (dk == "name") {
            std::string_view s;
            if (x.get_string().get(s) == simdjson::SUCCESS) gpu.name = std::string(s);
            continue;
          }
          od::json_type t;
          if ((err = x.type().get(t))) FS_JSON_FAIL(location_of(x, impl_->base, size), err);
          if (t != od::json_type::number) continue;  // unknown extras are tolerated
          auto val = read_int(x, dk);
          if (!val) continue;
          int64_t n = *val;
          if (dk == "id")
            gpu.id = static_cast<int32_t>(n);
          else if (dk == "totalGlobalMem")
            gpu.totalMemory = n;
          else if (dk == "computeMajor" || dk == "major")
            gpu.computeMajor = static_cast<int32_t>(n);
          else if (dk == "computeMinor" || dk == "minor")
            gpu.computeMinor = static_cast<int32_t>(n);
          else if (dk == "maxThreadsPerBlock")
            gpu.maxThreadsPerBlock = static_cast<int32_t>(n);
          else if (dk == "maxThreadsPerMultiprocessor" || dk == "maxThreadsPerMultiProcessor")
            threads_per_sm = n;
          else if (dk == "regsPerMultiprocessor")
            gpu.maxRegistersPerSm = static_cast<int32_t>(n);
          else if (dk == "warpSize")
            gpu.threadsPerWarp = static_cast<int32_t>(n);
          else if (dk == "sharedMemPerMultiprocessor" || dk == "maxSharedMemoryPerMultiProcessor")
            gpu.maxShmemPerSm = n;
          else if (dk == "numSms" || dk == "multiProcessorCount")
            gpu.smCount = static_cast<int32_t>(n);
          else if (dk == "clockRate")
            gpu.clockRate = n * 1000;  // cudaDeviceProp.clockRate is kHz
        }
        if (threads_per_sm && gpu.threadsPerWarp && *gpu.threadsPerWarp > 0)
          gpu.maxWarpsPerSm = static_cast<int32_t>(*threads_per_sm / *gpu.threadsPerWarp);
        meta.devices.push_back(std::move(gpu));
      }
    } else if (key == "distributedInfo") {
      od::json_type t;
      if ((err = v.type().get(t))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
      if (t != od::json_type::object) continue;
      od::object dobj;
      if ((err = v.get_object().get(dobj))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
      for (auto df_res : dobj) {
        od::field df;
        if ((err = std::move(df_res).get(df))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
        std::string_view dk;
        dk = df.unescaped_key();
        od::value x = df.value();
        if (dk == "rank") {
          if (auto r = read_int(x, "distributedInfo.rank")) meta.rank = static_cast<int32_t>(*r);
        } else if (dk == "world_size") {
          if (auto r = read_int(x, "distributedInfo.world_size"))
            meta.world_size = static_cast<int32_t>(*r);
        }
      }
    } else if (key == "baseTimeNanoseconds") {
      if (auto b = read_int(v, key)) meta.base_time_ns = *b;
    } else if (key == "displayTimeUnit" || key == "host_name" || key == "hostname" ||
               key == "username") {
      od::json_type t;
      if ((err = v.type().get(t))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
      if (t != od::json_type::string) continue;
      std::string_view s;
      if ((err = v.get_string().get(s))) FS_JSON_FAIL(location_of(v, impl_->base, size), err);
      if (key == "displayTimeUnit")
        meta.display_time_unit = std::string(s);
      else if (key == "username")
        meta.user = std::string(s);
      else
        meta.host_name = std::string(s);
    }
  }
  if (!saw_events)
    fail(0, "missing required field \"traceEvents\" (not a Chrome-trace / Kineto JSON file)");
  return meta;
}

namespace {

// Key matching on the raw key text in the input buffer (field::key(), no unescaping copy): `raw`
// points just past the opening quote, so "ph" matches when the bytes are `ph"`. The buffer is
// padded (SIMDJSON_PADDING zero bytes after the document), so comparing a literal of up to
// 27 bytes never reads outside it. A key spelled with escapes (`"p\u0068"`) does not match, as in
// simdjson's own find_field(); Kineto never writes those.
template <size_t N>
inline bool key_is(const char* raw, const char (&literal)[N]) {
  return std::memcmp(raw, literal, N - 1) == 0 && raw[N - 1] == '"';
}

enum class EventKey : uint8_t { ph, cat, name, ts, dur, pid, tid, args, other };

inline EventKey event_key(const char* k) {
  switch (k[0]) {
    case 'p':
      if (key_is(k, "ph")) return EventKey::ph;
      if (key_is(k, "pid")) return EventKey::pid;
      break;
    case 'c':
      if (key_is(k, "cat")) return EventKey::cat;
      break;
    case 'n':
      if (key_is(k, "name")) return EventKey::name;
      break;
    case 't':
      if (key_is(k, "ts")) return EventKey::ts;
      if (key_is(k, "tid")) return EventKey::tid;
      break;
    case 'd':
      if (key_is(k, "dur")) return EventKey::dur;
      break;
    case 'a':
      if (key_is(k, "args")) return EventKey::args;
      break;
    default:
      break;
  }
  return EventKey::other;
}

const char* event_key_name(EventKey k) {
  switch (k) {
    case EventKey::ph:
      return "ph";
    case EventKey::cat:
      return "cat";
    case EventKey::name:
      return "name";
    case EventKey::ts:
      return "ts";
    case EventKey::dur:
      return "dur";
    case EventKey::pid:
      return "pid";
    case EventKey::tid:
      return "tid";
    case EventKey::args:
      return "args";
    case EventKey::other:
      break;
  }
  return "?";
}

ArgValue* arg_slot(RawArgs& a, const char* k) {
  switch (k[0]) {
    case 'g':
      if (key_is(k, "grid")) return &a.grid;
      break;
    case 'k':
      if (key_is(k, "kind")) return &a.kind;
      break;
    case 's':
      if (key_is(k, "size")) return &a.size;
      if (key_is(k, "stream")) return &a.stream;
      if (key_is(k, "shared memory")) return &a.shared_memory;
      break;
    case 'A':
      if (key_is(k, "Addr")) return &a.addr;
      break;
    case 'n':
      if (key_is(k, "name")) return &a.meta_name;
      break;
    case 'b':
      if (key_is(k, "block")) return &a.block;
      if (key_is(k, "bytes")) return &a.bytes;
      if (key_is(k, "blocks per SM")) return &a.blocks_per_sm;
      break;
    case 'B':
      if (key_is(k, "Bytes")) return &a.bytes;
      break;
    case 'd':
      if (key_is(k, "device")) return &a.device;
      break;
    case 'l':
      if (key_is(k, "labels")) return &a.labels;
      break;
    case 'c':
      if (key_is(k, "context")) return &a.context;
      if (key_is(k, "cbid")) return &a.cbid;
      if (key_is(k, "correlation")) return &a.correlation;
      if (key_is(k, "cuda_sync_kind")) return &a.sync_kind;
      break;
    case 'E':
      if (key_is(k, "External id")) return &a.external_id;
      break;
    case 'e':
      if (key_is(k, "external id")) return &a.external_id;
      if (key_is(k, "est. achieved occupancy %")) return &a.est_occupancy;
      break;
    case 'r':
      if (key_is(k, "registers per thread")) return &a.registers;
      break;
    case 'w':
      if (key_is(k, "warps per SM")) return &a.warps_per_sm;
      if (key_is(k, "wait_on_cuda_event_id")) return &a.wait_event_id;
      break;
    case 'D':
      if (key_is(k, "Device Type")) return &a.device_type;
      if (key_is(k, "Device Id")) return &a.device_id;
      break;
    case 'T':
      if (key_is(k, "Total Allocated")) return &a.total_allocated;
      if (key_is(k, "Total Reserved")) return &a.total_reserved;
      break;
    default:
      break;
  }
  return nullptr;
}

}  // namespace

void Tokenizer::for_each_event(const std::function<void(const RawEvent&)>& fn) {
  const size_t size = input_.size;
  const char* base = impl_->base;
  od::document& doc = impl_->doc;
  auto err = impl_->iterate(input_);
  if (err) FS_JSON_FAIL(0, err);
  od::array events;
  od::json_type root_type;
  if ((err = doc.type().get(root_type))) FS_JSON_FAIL(location_of(doc, base, size), err);
  if (root_type == od::json_type::array) {
    if ((err = doc.get_array().get(events))) FS_JSON_FAIL(location_of(doc, base, size), err);
  } else {
    od::object root;
    if ((err = doc.get_object().get(root))) FS_JSON_FAIL(location_of(doc, base, size), err);
    od::value ev_value;
    if ((err = root.find_field_unordered("traceEvents").get(ev_value)))
      fail(location_of(doc, base, size), "missing required field \"traceEvents\"");
    if ((err = ev_value.get_array().get(events)))
      FS_JSON_FAIL(location_of(ev_value, base, size), err);
  }
  size_t index = 0;
  // One RawEvent reused for every event; only the args slots an event filled are cleared after
  // it (RawArgs is ~1.6 KB: clearing all of it per event was a measurable share of the pass).
  RawEvent raw;
  ArgValue* touched[sizeof(RawArgs) / sizeof(ArgValue)];
  size_t touched_count = 0;
  for (auto ev_res : events) {
    od::value ev;
    if ((err = std::move(ev_res).get(ev))) FS_JSON_FAIL(location_of(doc, base, size), err);
    size_t offset = location_of(ev, base, size);
    auto bad_type = [&](EventKey key, od::json_type t, const char* want) {
      fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" + event_key_name(key) +
                       "\" is " + type_name(t) + ", expected " + want);
    };
    od::json_type t;
    if ((err = ev.type().get(t))) FS_JSON_FAIL(offset, err);
    if (t != od::json_type::object)
      fail(offset, "traceEvents[" + std::to_string(index) + "] is " + type_name(t) +
                       ", expected an event object");
    od::object obj;
    if ((err = ev.get_object().get(obj))) FS_JSON_FAIL(offset, err);
    for (size_t i = 0; i < touched_count; ++i) *touched[i] = ArgValue{};
    touched_count = 0;
    raw.ph = raw.cat = raw.name = {};
    raw.has_name = false;
    raw.ts_ns.reset();
    raw.dur_ns.reset();
    raw.pid = raw.tid = RawId{};
    raw.index = index;
    raw.offset = offset;
    for (auto f_res : obj) {
      // Used in place (value_unsafe() after the error check): copying ondemand fields and values
      // around was a visible share of this loop.
      if ((err = f_res.error())) FS_JSON_FAIL(location_of(ev, base, size), err);
      od::field& f = f_res.value_unsafe();
      const EventKey key = event_key(f.key().raw());
      if (key == EventKey::other) continue;  // "id", "bp", "s", ...: skipped by the iterator
      od::value& v = f.value();
      if ((err = v.type().get(t))) FS_JSON_FAIL(location_of(v, base, size), err);
      switch (key) {
        case EventKey::ph:
        case EventKey::cat:
        case EventKey::name: {
          if (t != od::json_type::string) {
            if (key == EventKey::cat && t == od::json_type::null) continue;
            bad_type(key, t, "a string");
          }
          std::string_view s;
          if ((err = v.get_string().get(s))) FS_JSON_FAIL(location_of(v, base, size), err);
          if (key == EventKey::ph) {
            raw.ph = s;
          } else if (key == EventKey::cat) {
            raw.cat = s;
          } else {
            raw.name = s;
            raw.has_name = true;
          }
          break;
        }
        case EventKey::ts:
        case EventKey::dur: {
          if (t != od::json_type::number) bad_type(key, t, "a number (microseconds)");
          auto ns = micros_text_to_ns(v.raw_json_token());
          if (!ns)
            fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
                             event_key_name(key) + "\" is out of range");
          (key == EventKey::ts ? raw.ts_ns : raw.dur_ns) = ns;
          break;
        }
        case EventKey::pid:
        case EventKey::tid: {
          RawId& id = key == EventKey::pid ? raw.pid : raw.tid;
          if (t == od::json_type::number) {
            ArgValue a;
            if (!parse_number_text(v.raw_json_token(), a))
              bad_type(key, t, "an integer or a string");
            id.present = true;
            id.is_int = true;
            id.value = a.as_int();
          } else if (t == od::json_type::string) {
            std::string_view s;
            if ((err = v.get_string().get(s))) FS_JSON_FAIL(location_of(v, base, size), err);
            id.present = true;
            id.text = s;
            // "24572" is a number written as a string (older Kineto).
            int64_t n = 0;
            auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
            if (!s.empty() && ec == std::errc() && p == s.data() + s.size()) {
              id.is_int = true;
              id.value = n;
            }
          } else if (t != od::json_type::null) {
            bad_type(key, t, "an integer or a string");
          }
          break;
        }
        case EventKey::args: {
          if (t != od::json_type::object) {
            if (t == od::json_type::null) continue;
            bad_type(key, t, "an object");
          }
          od::object args;
          if ((err = v.get_object().get(args))) FS_JSON_FAIL(location_of(v, base, size), err);
          for (auto a_res : args) {
            if ((err = a_res.error())) FS_JSON_FAIL(location_of(v, base, size), err);
            od::field& af = a_res.value_unsafe();
            ArgValue* slot = arg_slot(raw.args, af.key().raw());
            if (!slot) continue;  // skipped by the iterator
            if (slot->kind == ArgValue::Kind::absent) touched[touched_count++] = slot;
            od::value& av = af.value();
            od::json_type at;
            if ((err = av.type().get(at))) FS_JSON_FAIL(location_of(av, base, size), err);
            switch (at) {
              case od::json_type::number:
                if (!parse_number_text(av.raw_json_token(), *slot))
                  slot->kind = ArgValue::Kind::other;
                break;
              case od::json_type::string:
                if ((err = av.get_string().get(slot->s)))
                  FS_JSON_FAIL(location_of(av, base, size), err);
                slot->kind = ArgValue::Kind::string;
                break;
              case od::json_type::array: {
                od::array arr;
                if ((err = av.get_array().get(arr))) FS_JSON_FAIL(location_of(av, base, size), err);
                int n = 0;
                bool ok = true;
                for (auto x_res : arr) {
                  od::value x;
                  if ((err = std::move(x_res).get(x)))
                    FS_JSON_FAIL(location_of(av, base, size), err);
                  int64_t iv = 0;
                  if (n < 3 && x.get_int64().get(iv) == simdjson::SUCCESS)
                    slot->v[n] = iv;
                  else
                    ok = false;
                  ++n;
                }
                slot->kind = ok && n == 3 ? ArgValue::Kind::triple : ArgValue::Kind::other;
                break;
              }
              default:
                slot->kind = ArgValue::Kind::other;
                break;
            }
          }
          break;
        }
        case EventKey::other:
          break;
      }
    }
    fn(raw);
    ++index;
  }
}

}  // namespace fleetscope::importers::kineto
