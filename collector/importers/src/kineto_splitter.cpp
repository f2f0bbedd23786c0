#include "kineto_splitter.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <stdexcept>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define FS_HAVE_AVX512_SCAN 1
#endif

#include "fleetscope/store/error.h"

namespace fleetscope::importers::kineto {

namespace {
constexpr size_t kNone = static_cast<size_t>(-1);

bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string mib(size_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}
}  // namespace

Splitter::Splitter(InputStream& input, size_t batch_bytes, size_t max_value_bytes)
    : input_(input),
      batch_bytes_(std::max<size_t>(batch_bytes, 4096)),
      max_value_bytes_(std::max<size_t>(max_value_bytes, 4096)) {
  window_.resize(2 * batch_bytes_ + 65536);
}

void Splitter::fail(size_t at, const std::string& what) {
  advance_lines(std::min(at, end_));
  throw InputError(input_.path(),
                   "byte " + std::to_string(window_offset_ + static_cast<int64_t>(at)) + " (line " +
                       std::to_string(lines_) + ")",
                   what);
}

static int64_t count_newlines_swar(const char* p, const char* end);

// Newlines in [p, end) (the splitter counts every byte of the document; a byte loop was 4 % of an
// import). SSE2: sixteen bytes per compare, the matches summed per byte lane (at most 255 rounds
// before the lanes are folded with a sum of absolute differences).
static int64_t count_newlines(const char* p, const char* end) {
  int64_t n = 0;
#if defined(__SSE2__)
  const __m128i newline = _mm_set1_epi8('\n');
  while (end - p >= 16) {
    __m128i lanes = _mm_setzero_si128();
    for (int round = 0; round < 255 && end - p >= 16; ++round, p += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(v, newline));  // a match is -1
    }
    const __m128i sums = _mm_sad_epu8(lanes, _mm_setzero_si128());
    n += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
  }
#endif
  return n + count_newlines_swar(p, end);
}

// The same, eight bytes at a time (the tail, and machines without SSE2).
static int64_t count_newlines_swar(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  constexpr uint64_t kNewlines = kOnes * static_cast<unsigned char>('\n');
  int64_t n = 0;
  for (; end - p >= 8; p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    const uint64_t x = w ^ kNewlines;  // zero bytes where p[i] == '\n'
    // Exact zero-byte mask: high bit set in each byte of x that is zero.
    const uint64_t zero = ~(((x & ~kHigh) + ~kHigh) | x) & kHigh;
    // One bit (0x80) per matching byte: move it to bit 0 of its byte and sum the bytes into the
    // top one (a multiply, where a popcount without -mpopcnt is a libgcc call).
    n += static_cast<int64_t>(((zero >> 7) * kOnes) >> 56);
  }
  for (; p < end; ++p) n += *p == '\n';
  return n;
}

// The first '"' or '\\' in [i, end), else end; eight bytes at a time. Kineto's strings are
// short (a memchr call per quote and per backslash cost more than the scan) and rarely escaped.
static size_t find_quote_or_backslash(const char* data, size_t i, size_t end) {
  static_assert(std::endian::native == std::endian::little);
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  constexpr uint64_t kQuotes = kOnes * static_cast<unsigned char>('"');
  constexpr uint64_t kBackslashes = kOnes * static_cast<unsigned char>('\\');
  for (; end - i >= 8; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    const uint64_t q = w ^ kQuotes, b = w ^ kBackslashes;  // zero bytes where they match
    // Classic zero-byte test: its lowest set bit is exact (borrows only create marks above a
    // real zero byte), and the lowest byte is the first in memory (little-endian).
    const uint64_t hits = ((q - kOnes) & ~q & kHigh) | ((b - kOnes) & ~b & kHigh);
    if (hits) return i + static_cast<size_t>(__builtin_ctzll(hits) >> 3);
  }
  for (; i < end; ++i)
    if (data[i] == '"' || data[i] == '\\') return i;
  return end;
}

// The bracket step shared by every vectorised scan: visits one block's brackets outside strings in
// order and returns the object's end (exclusive) once the depth is back to 0, kNone to go on to the
// next block, kUnbalanced when a closing bracket comes first (the scalar scan reports it).
constexpr size_t kUnbalanced = kNone - 1;
static inline size_t visit_brackets(uint64_t opens, uint64_t closes, int64_t& depth, size_t block) {
  uint64_t brackets = opens | closes;
  while (brackets) {
    const uint64_t bit = brackets & -brackets;
    brackets ^= bit;
    if (opens & bit) {
      ++depth;
    } else if (--depth == 0) {
      return block + static_cast<size_t>(std::countr_zero(bit)) + 1;
    } else if (depth < 0) {
      return kUnbalanced;
    }
  }
  return kNone;
}

// The end (exclusive) of the JSON object starting at data[pos] ('{'), found 64 bytes at a time
// the way simdjson's stage 1 finds structure: a mask of quotes, its prefix XOR for the bytes inside
// strings, and only the brackets outside them are visited. kNone where the scalar scan must decide:
// a backslash in a block (escapes are rare in Kineto traces, and the scalar scan handles them), the
// object running past `stop` (refill, or the size limit and its error message), unbalanced
// brackets. '[' | 0x20 is '{' and ']' | 0x20 is '}' (no other byte maps to either), so one compare
// finds both kinds of opening bracket and one both kinds of closing bracket.
using ObjectEndScan = size_t (*)(const char* data, size_t pos, size_t stop);

static size_t object_end_scalar(const char*, size_t, size_t) {
  return kNone;
}

#if defined(__SSE2__)
// Bit i set where p[i] == c, for the 64 bytes at p.
static inline uint64_t byte_mask(const __m128i (&v)[4], char c) {
  const __m128i needle = _mm_set1_epi8(c);
  uint64_t m = 0;
  for (int k = 0; k < 4; ++k)
    m |= static_cast<uint64_t>(
             static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[k], needle))))
         << (16 * k);
  return m;
}

// Bit i set where an odd number of the bits 0..i of x are set: the bytes inside a string when x
// marks its quotes (the opening quote included, the closing one not).
static inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

static size_t object_end_sse2(const char* data, size_t pos, size_t stop) {
  uint64_t in_string = 0;  // all ones while a string is open across a block boundary
  int64_t depth = 0;
  const __m128i fold = _mm_set1_epi8(0x20);
  for (size_t p = pos; p + 64 <= stop; p += 64) {
    __m128i v[4], folded[4];
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + p + 16 * k));
      folded[k] = _mm_or_si128(v[k], fold);
    }
    if (byte_mask(v, '\\')) return kNone;
    const uint64_t strings = prefix_xor(byte_mask(v, '"')) ^ in_string;
    in_string = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    const size_t end = visit_brackets(byte_mask(folded, '{') & ~strings,
                                      byte_mask(folded, '}') & ~strings, depth, p);
    if (end != kNone) return end == kUnbalanced ? kNone : end;
  }
  return kNone;
}
#endif

#if defined(FS_HAVE_AVX512_SCAN)
// AVX-512BW: the four masks of a block are four compares of one 64-byte register, and the prefix
// XOR is one carry-less multiply by all ones (simdjson's stage 1 does the same).
__attribute__((target("avx512bw,pclmul"))) static size_t object_end_avx512(const char* data,
                                                                           size_t pos,
                                                                           size_t stop) {
  uint64_t in_string = 0;
  int64_t depth = 0;
  const __m512i backslash = _mm512_set1_epi8('\\'), quote = _mm512_set1_epi8('"');
  const __m512i open = _mm512_set1_epi8('{'), close = _mm512_set1_epi8('}');
  const __m512i fold = _mm512_set1_epi8(0x20);
  const __m128i ones = _mm_set1_epi8(-1);
  for (size_t p = pos; p + 64 <= stop; p += 64) {
    const __m512i v = _mm512_loadu_si512(data + p);
    if (_mm512_cmpeq_epi8_mask(v, backslash)) return kNone;
    const uint64_t quotes = _mm512_cmpeq_epi8_mask(v, quote);
    const uint64_t strings = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_clmulepi64_si128(
                                 _mm_cvtsi64_si128(static_cast<int64_t>(quotes)), ones, 0))) ^
                             in_string;
    in_string = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    const __m512i folded = _mm512_or_si512(v, fold);
    const size_t end = visit_brackets(_mm512_cmpeq_epi8_mask(folded, open) & ~strings,
                                      _mm512_cmpeq_epi8_mask(folded, close) & ~strings, depth, p);
    if (end != kNone) return end == kUnbalanced ? kNone : end;
  }
  return kNone;
}
#endif

bool object_scan_supported(ObjectScan kind) {
  switch (kind) {
    case ObjectScan::scalar:
      return true;
    case ObjectScan::sse2:
#if defined(__SSE2__)
      return true;
#else
      return false;
#endif
    case ObjectScan::avx512:
#if defined(FS_HAVE_AVX512_SCAN)
      return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("pclmul");
#else
      return false;
#endif
  }
  return false;
}

namespace {
ObjectScan best_object_scan() {
  for (ObjectScan kind : {ObjectScan::avx512, ObjectScan::sse2})
    if (object_scan_supported(kind)) return kind;
  return ObjectScan::scalar;
}

ObjectEndScan scan_function(ObjectScan kind) {
  switch (kind) {
#if defined(FS_HAVE_AVX512_SCAN)
    case ObjectScan::avx512:
      return object_end_avx512;
#endif
#if defined(__SSE2__)
    case ObjectScan::sse2:
      return object_end_sse2;
#endif
    default:
      return object_end_scalar;
  }
}

// Chosen once; only tests change it (set_object_scan), before any import runs.
std::atomic<ObjectScan> g_object_scan{best_object_scan()};
}  // namespace

ObjectScan object_scan() {
  return g_object_scan.load(std::memory_order_relaxed);
}

void set_object_scan(ObjectScan kind) {
  if (!object_scan_supported(kind)) throw std::invalid_argument("object scan not supported here");
  g_object_scan.store(kind, std::memory_order_relaxed);
}

size_t Splitter::find_object_end(size_t pos, size_t limit) const {
  return scan_function(object_scan())(window_.data(), pos, std::min(end_, pos + limit));
}

void Splitter::advance_lines(size_t to) {
  if (to <= counted_) return;
  lines_ += count_newlines(window_.data() + counted_, window_.data() + to);
  counted_ = to;
}

// The batch being built lives in [batch_start_, ...): keep_ protects it (and the value being
// scanned) across refills; positions held by callers are shifted by the returned amount.
bool Splitter::fill() {
  if (eof_) return false;
  if (keep_ > 0) {
    advance_lines(keep_);
    const size_t shift = keep_;
    std::memmove(window_.data(), window_.data() + shift, end_ - shift);
    pos_ -= shift, end_ -= shift, counted_ -= shift, keep_ = 0;
    if (batch_start_ != kNone) batch_start_ -= shift, batch_end_ -= shift;
    if (scan_start_ != kNone) scan_start_ -= shift, scan_cursor_ -= shift;
    window_offset_ += static_cast<int64_t>(shift);
  }
  if (end_ == window_.size()) {
    // One value larger than the window: grow, up to the budget's share for one value.
    if (window_.size() >= max_value_bytes_ + 2 * batch_bytes_)
      fail(scan_start_ != kNone ? scan_start_ : pos_,
           "a single JSON value is larger than the memory budget allows (" + mib(max_value_bytes_) +
               "; raise --memory-budget)");
    window_.resize(std::min(window_.size() * 2, max_value_bytes_ + 2 * batch_bytes_));
  }
  const size_t n = input_.read(window_.data() + end_, window_.size() - end_);
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

bool Splitter::skip_ws() {
  for (;;) {
    while (pos_ < end_ && is_ws(window_[pos_])) ++pos_;
    if (pos_ < end_) return true;
    keep_ = std::min(keep_, pos_);
    if (!fill()) return false;
  }
}

size_t Splitter::scan_value(size_t limit, const char* what) {
  scan_start_ = pos_;
  scan_cursor_ = pos_;
  keep_ = std::min(keep_, pos_);
  const char first = window_[pos_];
  const bool scalar = first != '{' && first != '[' && first != '"';
  int depth = 0;
  bool in_string = false;
  for (;;) {
    size_t i = scan_cursor_;
    const char* data = window_.data();
    if (scalar) {
      while (i < end_ && !is_ws(data[i]) && data[i] != ',' && data[i] != ']' && data[i] != '}') ++i;
      if (i < end_) {
        scan_start_ = kNone;
        return i;
      }
    } else {
      while (i < end_) {
        if (in_string) {
          // Strings are most of a trace's bytes: jump to the next quote or backslash (an
          // escape is skipped whole).
          const size_t stop = find_quote_or_backslash(data, i, end_);
          if (stop == end_) {
            i = end_;
            break;
          }
          if (data[stop] == '\\') {
            i = stop + 2;
            continue;
          }
          i = stop + 1;
          in_string = false;
          if (depth == 0) {
            scan_start_ = kNone;
            return i;
          }
          continue;
        }
        switch (data[i++]) {
          case '"':
            in_string = true;
            break;
          case '{':
          case '[':
            ++depth;
            break;
          case '}':
          case ']':
            if (--depth == 0) {
              scan_start_ = kNone;
              return i;
            }
            if (depth < 0) fail(i - 1, "invalid JSON: unbalanced brackets");
            break;
          default:
            break;
        }
      }
    }
    scan_cursor_ = i;
    if (scan_cursor_ - scan_start_ > limit)
      fail(scan_start_, std::string("the ") + what + " is larger than the memory budget allows (" +
                            mib(limit) + "; raise --memory-budget)");
    if (!fill()) {
      if (scalar) {
        scan_start_ = kNone;
        return end_;
      }
      fail(end_, std::string("unexpected end of input inside the ") + what +
                     (in_string ? " (unterminated string)" : ", expected its closing bracket"));
    }
  }
}

std::string Splitter::read_key() {
  if (window_[pos_] != '"') fail(pos_, "invalid JSON: expected a member name in quotes");
  const size_t end = scan_value(max_value_bytes_, "member name");
  std::string key(window_.data() + pos_ + 1, end - pos_ - 2);
  pos_ = end;
  return key;
}

void Splitter::emit(EventBatch& batch) {
  const size_t n = batch_end_ - batch_start_;
  batch.text.resize(n + 2 + simdjson::SIMDJSON_PADDING);
  batch.text[0] = '[';
  std::memcpy(batch.text.data() + 1, window_.data() + batch_start_, n);
  batch.text[n + 1] = ']';
  std::memset(batch.text.data() + n + 2, 0, simdjson::SIMDJSON_PADDING);
  batch.json_size = n + 2;
  batch.offset = window_offset_ + static_cast<int64_t>(batch_start_);
  batch.first_line = batch_line_;
  batch.first_index = batch_first_index_;
  batch.count = batch_count_;
  batch_start_ = kNone;
  batch_count_ = 0;
}

Splitter::Step Splitter::next(EventBatch& batch) {
  for (;;) {
    switch (state_) {
      case State::start: {
        keep_ = pos_;
        if (!skip_ws()) fail(pos_, "empty document, expected a Kineto trace (JSON)");
        const char c = window_[pos_];
        if (c == '[') {
          ++pos_;
          root_array_ = saw_events_ = true;
          state_ = State::events;
          expect_element_ = true;
          return Step::events_begin;
        }
        if (c != '{')
          fail(pos_,
               "the document does not start with '{' or '[', expected a JSON object with "
               "a \"traceEvents\" array");
        ++pos_;
        state_ = State::object_member;
        first_member_ = true;
        break;
      }
      case State::object_member: {
        keep_ = pos_;
        if (!skip_ws()) fail(pos_, "unexpected end of input, expected a member name or '}'");
        if (window_[pos_] == '}' && first_member_) {
          ++pos_;
          state_ = State::done;
          break;
        }
        first_member_ = false;
        std::string key = read_key();
        if (!skip_ws() || window_[pos_] != ':')
          fail(pos_, "invalid JSON: expected ':' after \"" + key + "\"");
        ++pos_;
        if (!skip_ws())
          fail(pos_, "unexpected end of input, expected the value of \"" + key + "\"");
        if (key == "traceEvents" && window_[pos_] == '[' && !saw_events_) {
          ++pos_;
          saw_events_ = true;
          state_ = State::events;
          expect_element_ = true;
          after_comma_ = false;
          return Step::events_begin;
        }
        MetaMember m;
        m.key = std::move(key);
        advance_lines(pos_);
        m.offset = window_offset_ + static_cast<int64_t>(pos_);
        m.line = lines_;
        const std::string what = "value of \"" + m.key + "\"";
        const size_t end = scan_value(max_value_bytes_, what.c_str());
        m.value.assign(window_.data() + pos_, end - pos_);
        pos_ = end;
        members_.push_back(std::move(m));
        state_ = State::object_after_value;
        break;
      }
      case State::object_after_value:
      case State::after_events: {
        if (root_array_) {
          state_ = State::done;
          break;
        }
        keep_ = pos_;
        if (!skip_ws()) fail(pos_, "unexpected end of input, expected ',' or '}'");
        const char c = window_[pos_++];
        if (c == ',')
          state_ = State::object_member;
        else if (c == '}')
          state_ = State::done;
        else
          fail(pos_ - 1, "invalid JSON: expected ',' or '}' between top-level members");
        break;
      }
      case State::events: {
        if (batch_start_ != kNone && batch_end_ - batch_start_ >= batch_bytes_) {
          emit(batch);
          return Step::batch;
        }
        keep_ = batch_start_ != kNone ? batch_start_ : pos_;
        if (!skip_ws())
          fail(pos_, "unexpected end of input in \"traceEvents\", expected an event, ',' or ']'");
        const char c = window_[pos_];
        if (expect_element_) {
          if (c == ']' && !after_comma_) {
            ++pos_;
            state_ = State::after_events;
            if (batch_start_ != kNone) {
              emit(batch);
              return Step::batch;
            }
            break;
          }
          if (c == ']' || c == ',')
            fail(pos_, "invalid JSON: expected traceEvents[" + std::to_string(index_) + "]");
          if (batch_start_ == kNone) {
            batch_start_ = pos_;
            advance_lines(pos_);
            batch_line_ = lines_;
            batch_first_index_ = index_;
            batch_count_ = 0;
          }
          size_t end = c == '{' ? find_object_end(pos_, max_value_bytes_) : kNone;
          if (end == kNone) end = scan_value(max_value_bytes_, "event");
          pos_ = batch_end_ = end;
          ++index_;
          ++batch_count_;
          expect_element_ = false;
        } else if (c == ',') {
          ++pos_;
          expect_element_ = after_comma_ = true;
        } else if (c == ']') {
          ++pos_;
          state_ = State::after_events;
          if (batch_start_ != kNone) {
            emit(batch);
            return Step::batch;
          }
        } else {
          fail(pos_, "invalid JSON: expected ',' or ']' after traceEvents[" +
                         std::to_string(index_ - 1) + "]");
        }
        break;
      }
      case State::done: {
        keep_ = pos_;
        if (skip_ws())
          fail(pos_, "unexpected content after the end of the JSON document, expected the end");
        return Step::end;
      }
    }
  }
}

}  // namespace fleetscope::importers::kineto
