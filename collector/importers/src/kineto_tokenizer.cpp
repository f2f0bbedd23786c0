#include "kineto_tokenizer.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "fleetscope/store/error.h"
#include "fleetscope/store/read_policy.h"
#include "json_error_position.h"
#include "kineto_input.h"
#include "kineto_splitter.h"

namespace fleetscope::importers::kineto {

namespace od = simdjson::ondemand;

TokenizerOptions TokenizerOptions::from_budget(int64_t budget_bytes) {
  TokenizerOptions o;
  const size_t budget = static_cast<size_t>(std::max<int64_t>(budget_bytes, int64_t{16} << 20));
  // A batch is 1/2048 of the budget (512 KiB at the 1 GiB default, within [256 KiB, 8 MiB]). The
  // pipeline (split, parse, translate, write) starts once the first batch is split and ends one
  // batch after the last: with 8 MiB batches that fill and drain left a core idle for tens of ms
  // at each end of a 200 MB import (1e6 events: 0.65 s -> 0.60 s with 512 KiB); per-batch costs
  // are still a small fraction. One value may use a quarter of the budget.
  o.batch_bytes = std::clamp<size_t>(budget / 2048, size_t{256} << 10, size_t{8} << 20);
  o.queued_batches = 3;
  o.max_value_bytes = budget / 4;
  o.whole_document_bytes = budget / 16;
  return o;
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

// A number's text as the file has it, for an error (without the whitespace after it, cut short).
std::string number_excerpt(std::string_view t) {
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  return std::string(t.substr(0, 40));
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

namespace {

// A stretch of the buffer being parsed that maps to the document: the batch of events, or one
// metadata value inside the small document read_metadata() assembles from them.
struct Segment {
  size_t buffer_start = 0, size = 0;
  int64_t document_offset = 0, line = 1;
  const char* text = nullptr;
};

// The events of a batch as a stretch of the document (text[0] is the '[' the splitter added).
Segment segment_of(const EventBatch& batch) {
  const char* base = batch.view ? batch.view : batch.text.data();
  return Segment{1, batch.json_size - 2, batch.offset, batch.first_line, base + 1};
}

std::string position_in_document(const std::string& document, size_t document_size, size_t offset) {
  offset = std::min(offset, document_size);
  const int64_t line = 1 + std::count(document.data(), document.data() + offset, '\n');
  return "byte " + std::to_string(offset) + " (line " + std::to_string(line) + ")";
}

std::string position_in_segments(const Segment* begin, const Segment* end, size_t offset) {
  for (const Segment* s = begin; s != end; ++s) {
    const auto start = static_cast<size_t>(s->document_offset);
    if (offset >= start && offset <= start + s->size) {
      const int64_t line = s->line + std::count(s->text, s->text + (offset - start), '\n');
      return "byte " + std::to_string(offset) + " (line " + std::to_string(line) + ")";
    }
  }
  return "byte " + std::to_string(offset);
}

// What the reader thread hands over, in document order.
struct Item {
  enum class Kind { batch, events_begin, end, error } kind = Kind::batch;
  EventBatch batch;
  std::vector<MetaMember> members;
  std::exception_ptr error;
};

}  // namespace

struct Tokenizer::Impl {
  TokenizerOptions options;
  InputStream input;
  od::parser parser;

  // The buffer being parsed and how it maps to the document.
  const char* base = nullptr;
  size_t size = 0;
  std::vector<Segment> segments;
  std::string meta_text;  // the assembled metadata document
  EventBatch current;     // the batch being parsed

  // Reader thread -> this thread.
  std::thread reader;
  mutable std::mutex mu;
  std::condition_variable changed;
  std::deque<Item> items;
  std::vector<EventBatch> free_batches;  // parsed batches, their buffers reused by the reader
  bool stop = false;
  int64_t json_read = 0, file_read = 0;
  bool events_is_root_array = false;
  bool events_done = false;
  std::vector<MetaMember> trailing;

  // Small .json.gz files (decompressed within a quarter of the budget) are inflated whole.
  Impl(const std::string& path, TokenizerOptions o)
      : options(o), input(path, std::max(o.max_value_bytes, o.whole_document_bytes)) {}

  // Whole-document mode (TokenizerOptions::whole_document_bytes): the document in one padded
  // buffer; the items are made by one simdjson pass over it instead of by the reader thread.
  bool whole = false;
  std::string document;
  size_t document_size = 0;

  bool read_whole_document() {
    const auto known = input.known_size();
    if (!known || options.whole_document_bytes == 0 ||
        static_cast<uint64_t>(*known) > options.whole_document_bytes)
      return false;
    size_t got = 0;
    if (input.take_whole(document, simdjson::SIMDJSON_PADDING)) {
      got = static_cast<size_t>(*known);
    } else {
      document.resize(static_cast<size_t>(*known) + simdjson::SIMDJSON_PADDING);
      size_t n = 0;
      while (got < static_cast<size_t>(*known) &&
             (n = input.read(document.data() + got, static_cast<size_t>(*known) - got)) > 0)
        got += n;
      std::memset(document.data() + got, 0, document.size() - got);
    }
    document_size = got;
    json_read = file_read = static_cast<int64_t>(got);
    file_read = input.file_bytes();
    whole = true;
    return true;
  }

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    changed.notify_all();
    if (reader.joinable()) reader.join();
  }

  bool started = false;
  void start(const Tokenizer& tok) {
    if (started) return;
    started = true;
    if (read_whole_document()) {
      split_whole(tok);
      return;
    }
    reader = std::thread([this] { read_all(); });
  }

  // One On-Demand pass over the top level: each member's raw text is kept (as the splitter
  // does), the traceEvents array becomes a single batch that views the document in place (its
  // text is followed by the rest of the padded document, so simdjson's padding holds).
  void split_whole(const Tokenizer& tok);

  void push(Item item) {
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return stop || items.size() < options.queued_batches; });
    if (stop) return;
    items.push_back(std::move(item));
    changed.notify_all();
  }

  void read_all() {
    try {
      Splitter splitter(input, options.batch_bytes, options.max_value_bytes);
      for (;;) {
        Item item;
        {
          std::lock_guard lock(mu);
          if (stop) return;
          if (!free_batches.empty()) {
            item.batch = std::move(free_batches.back());
            free_batches.pop_back();
          }
        }
        const Splitter::Step step = splitter.next(item.batch);
        {
          std::lock_guard lock(mu);
          json_read = splitter.bytes_consumed();
          file_read = input.file_bytes_read();
        }
        if (step == Splitter::Step::batch) {
          item.kind = Item::Kind::batch;
        } else if (step == Splitter::Step::events_begin) {
          item.kind = Item::Kind::events_begin;
          item.members = std::move(splitter.members());
          splitter.members().clear();
          item.batch.count = splitter.events_is_root_array() ? 1 : 0;
        } else {
          item.kind = Item::Kind::end;
          item.members = std::move(splitter.members());
          item.batch.count = splitter.saw_events() ? 1 : 0;
          push(std::move(item));
          return;
        }
        push(std::move(item));
      }
    } catch (...) {
      Item item;
      item.kind = Item::Kind::error;
      item.error = std::current_exception();
      push(std::move(item));
    }
  }

  Item pop() {
    if (whole) {
      Item item = std::move(items.front());
      items.pop_front();
      return item;
    }
    std::unique_lock lock(mu);
    changed.wait(lock, [&] { return !items.empty(); });
    Item item = std::move(items.front());
    items.pop_front();
    changed.notify_all();
    if (item.kind == Item::Kind::error) std::rethrow_exception(item.error);
    return item;
  }

  void recycle(EventBatch&& batch) {
    if (whole) return;
    std::lock_guard lock(mu);
    if (free_batches.size() < 2) free_batches.push_back(std::move(batch));
  }

  // Document offset of a position in the buffer being parsed.
  size_t to_document(size_t buffer_pos) const {
    const Segment* best = nullptr;
    for (const Segment& s : segments)
      if (s.buffer_start <= buffer_pos) best = &s;
    if (!best)
      return segments.empty() ? buffer_pos : static_cast<size_t>(segments[0].document_offset);
    const size_t within = std::min(buffer_pos - best->buffer_start, best->size);
    return static_cast<size_t>(best->document_offset) + within;
  }

  // Where the iterator stands, as a document offset (the end of the buffer when it is past it).
  template <class T>
  size_t where(T& iterable) const {
    const char* loc = nullptr;
    if (iterable.current_location().get(loc) == simdjson::SUCCESS && loc && loc >= base &&
        loc <= base + size)
      return to_document(static_cast<size_t>(loc - base));
    return to_document(size);
  }

  // Assembles {"key": value, ...} from the splitter's members, with the segment map.
  void load_members(const std::vector<MetaMember>& members) {
    meta_text = "{";
    segments.clear();
    for (const MetaMember& m : members) {
      if (meta_text.size() > 1) meta_text += ',';
      meta_text += '"';
      meta_text += m.key;
      meta_text += "\":";
      segments.push_back({meta_text.size(), m.value.size(), m.offset, m.line, m.value.data()});
      meta_text += m.value;
    }
    meta_text += '}';
    size = meta_text.size();
    meta_text.append(simdjson::SIMDJSON_PADDING, '\0');
    base = meta_text.data();
  }
};

Tokenizer::Tokenizer(std::string path, TokenizerOptions options)
    : path_(std::move(path)), impl_(std::make_unique<Impl>(path_, options)) {}

Tokenizer::~Tokenizer() = default;

bool Tokenizer::gzip() const {
  return impl_->input.gzip();
}

ReadProgress Tokenizer::progress() const {
  std::lock_guard lock(impl_->mu);
  return {impl_->input.file_bytes(), impl_->file_read, impl_->json_read};
}

std::string Tokenizer::position(size_t offset) const {
  // The whole document is at hand: count its lines up to the offset.
  if (impl_->whole) return position_in_document(impl_->document, impl_->document_size, offset);
  const auto& segments = impl_->segments;
  return position_in_segments(segments.data(), segments.data() + segments.size(), offset);
}

void Tokenizer::fail(size_t offset, const std::string& what) const {
  throw InputError(path_, position(offset), what);
}

// simdjson's error as the user reads it: an allocation refused by the reading command's memory
// budget (store/read_policy.h) is that, not "invalid JSON".
static std::string json_error_text(simdjson::error_code err) {
  if (err == simdjson::MEMALLOC && store::read_memory_limit() != 0)
    return store::memory_budget_text();
  return std::string("invalid JSON: ") + simdjson::error_message(err);
}

#define FS_JSON_FAIL(where, err) fail(where, json_error_text(err))

static bool is_json_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

void Tokenizer::Impl::split_whole(const Tokenizer& tok) {
  const char* doc_base = document.data();
  base = doc_base;
  size = document_size;
  segments.assign(1, Segment{0, document_size, 0, 1, doc_base});
  // Lines are counted only when an error needs one (Tokenizer::position, from the document).
  auto line_at = [](size_t) { return int64_t{0}; };
  auto json_fail = [&](size_t at, simdjson::error_code e) {
    if (auto located = locate_json_error(doc_base, document_size, e))
      tok.fail(located->offset, "invalid JSON: " + located->what);
    tok.fail(at, json_error_text(e));
  };
  od::document doc;
  auto err = parser.iterate(simdjson::padded_string_view(doc_base, document_size, document.size()))
                 .get(doc);
  if (err) json_fail(0, err);
  od::json_type root_type;
  if ((err = doc.type().get(root_type))) json_fail(where(doc), err);
  // Nothing but whitespace may follow the root value (the streamed reader's splitter refuses "[]]"
  // too; simdjson On-Demand stops reading at the root's end). Checked from where the root's last
  // value ends, so it costs no second walk of the document.
  auto expect_end_after = [&](size_t at, bool closing_brace) {
    while (at < document_size && is_json_space(doc_base[at])) ++at;
    if (closing_brace) {
      if (at >= document_size || doc_base[at] != '}')
        tok.fail(at, "invalid JSON: expected '}' at the end of the document");
      ++at;
      while (at < document_size && is_json_space(doc_base[at])) ++at;
    }
    if (at < document_size)
      tok.fail(at, "unexpected content after the end of the JSON document, expected the end");
  };
  auto events_item = [&](std::string_view raw) {
    Item b;
    b.kind = Item::Kind::batch;
    EventBatch& batch = b.batch;
    batch.view = raw.data();
    batch.view_capacity = document.size() - static_cast<size_t>(raw.data() - doc_base);
    batch.json_size = raw.size();
    batch.offset = static_cast<int64_t>(raw.data() - doc_base) + 1;
    batch.first_line = line_at(static_cast<size_t>(raw.data() - doc_base) + 1);
    batch.first_index = 0;
    batch.count = EventBatch::kUnknownCount;
    return b;
  };
  Item begin, end;
  begin.kind = Item::Kind::events_begin;
  end.kind = Item::Kind::end;
  if (root_type == od::json_type::array) {
    std::string_view raw;
    if ((err = doc.raw_json().get(raw))) json_fail(where(doc), err);
    expect_end_after(static_cast<size_t>(raw.data() - doc_base) + raw.size(), false);
    begin.batch.count = 1;  // the document is the events array
    end.batch.count = 1;
    items.push_back(std::move(begin));
    items.push_back(events_item(raw));
    items.push_back(std::move(end));
    return;
  }
  if (root_type != od::json_type::object)
    tok.fail(0,
             "the document does not start with '{' or '[', expected a JSON object with a "
             "\"traceEvents\" array");
  od::object root;
  if ((err = doc.get_object().get(root))) json_fail(where(doc), err);
  std::vector<MetaMember> members;
  std::optional<Item> events;
  // Where the last member's value ends (no member: just after the root's '{').
  size_t root_content_end =
      static_cast<size_t>(std::find(doc_base, doc_base + document_size, '{') - doc_base) + 1;
  // The top level is checked between the members as well: simdjson On-Demand takes
  // `"a": "x" : 0, "b": 1` (found by the fuzz target's reader differential; the streamed reader's
  // splitter refuses it).
  auto expect_only = [&](size_t from, size_t to, char separator, const std::string& what) {
    bool seen = separator == 0;
    for (size_t at = from; at < to; ++at) {
      if (is_json_space(doc_base[at])) continue;
      if (!seen && doc_base[at] == separator) {
        seen = true;
        continue;
      }
      tok.fail(at, "invalid JSON: expected " + what);
    }
    if (!seen) tok.fail(to, "invalid JSON: expected " + what);
  };
  bool first_member = true;
  for (auto field_res : root) {
    od::field field;
    if ((err = std::move(field_res).get(field))) json_fail(where(doc), err);
    // The key as written (escapes kept), up to its closing quote.
    const char* key_begin = field.key().raw();
    const char* key_end = key_begin;
    while (*key_end != '"') key_end += *key_end == '\\' ? 2 : 1;
    std::string key(key_begin, key_end);
    expect_only(root_content_end, static_cast<size_t>(key_begin - 1 - doc_base),
                first_member ? 0 : ',', "',' or '}' between top-level members");
    first_member = false;
    od::value v = field.value();
    od::json_type t;
    if ((err = v.type().get(t))) json_fail(where(v), err);
    std::string_view raw;
    if (t == od::json_type::array) {
      od::array a;
      if ((err = v.get_array().get(a)) || (err = a.raw_json().get(raw))) json_fail(where(v), err);
    } else if (t == od::json_type::object) {
      od::object o;
      if ((err = v.get_object().get(o)) || (err = o.raw_json().get(raw))) json_fail(where(v), err);
    } else {
      raw = v.raw_json_token();
    }
    expect_only(static_cast<size_t>(key_end + 1 - doc_base),
                static_cast<size_t>(raw.data() - doc_base), ':', "':' after \"" + key + "\"");
    root_content_end = static_cast<size_t>(raw.data() - doc_base) + raw.size();
    if (key == "traceEvents" && t == od::json_type::array && !events) {
      events = events_item(raw);
      continue;
    }
    MetaMember m;
    m.key = std::move(key);
    m.value.assign(raw);
    m.offset = raw.data() - doc_base;
    m.line = line_at(static_cast<size_t>(m.offset));
    members.push_back(std::move(m));
  }
  expect_end_after(root_content_end, true);
  // Every member, trailing ones included, is known before the first event: the base time
  // applies from the start.
  if (!events) {
    end.members = std::move(members);
    end.batch.count = 0;
    items.push_back(std::move(end));
    return;
  }
  begin.members = std::move(members);
  end.batch.count = 1;
  items.push_back(std::move(begin));
  items.push_back(std::move(*events));
  items.push_back(std::move(end));
}

TraceMeta Tokenizer::read_metadata() {
  impl_->start(*this);
  for (;;) {
    Item item = impl_->pop();
    if (item.kind == Item::Kind::events_begin || item.kind == Item::Kind::end) {
      const bool root_array = item.kind == Item::Kind::events_begin && item.batch.count == 1;
      if (item.kind == Item::Kind::end) impl_->events_done = true;
      TraceMeta meta;
      if (root_array) {
        meta.events_is_root_array = true;
        impl_->events_is_root_array = true;
        return meta;
      }
      parse_members(item.members, meta, /*require_events=*/item.kind == Item::Kind::end);
      return meta;
    }
  }
}

void Tokenizer::read_trailing_metadata(TraceMeta& meta) {
  if (impl_->events_is_root_array) return;
  parse_members(impl_->trailing, meta, false);
  impl_->trailing.clear();
}

void Tokenizer::parse_members(const std::vector<MetaMember>& members, TraceMeta& meta,
                              bool require_events) {
  // Every top-level value other than the events is validated whole (simdjson DOM), whichever
  // reader found it: where a malformed value ends differs between the streamed reader's bracket
  // count and On-Demand's skip, so checking only what each reads made them disagree on the same
  // file (found by the fuzz target's reader differential). Metadata is small.
  simdjson::dom::parser validator;
  for (const MetaMember& m : members) {
    simdjson::dom::element ignored;
    if (auto e = validator.parse(m.value).get(ignored)) {
      const auto located = locate_json_error(m.value.data(), m.value.size(), e);
      throw InputError(
          path_,
          "byte " + std::to_string(m.offset + static_cast<int64_t>(located ? located->offset : 0)),
          "invalid JSON in the value of \"" + m.key +
              "\": " + (located ? located->what : simdjson::error_message(e)));
    }
  }
  impl_->load_members(members);
  od::document doc;
  auto err = impl_->parser
                 .iterate(simdjson::padded_string_view(impl_->meta_text.data(), impl_->size,
                                                       impl_->meta_text.size()))
                 .get(doc);
  if (err) FS_JSON_FAIL(impl_->to_document(0), err);
  od::json_type root_type;
  if ((err = doc.type().get(root_type))) FS_JSON_FAIL(impl_->where(doc), err);
  od::object root;
  if ((err = doc.get_object().get(root))) FS_JSON_FAIL(impl_->where(doc), err);
  auto expect = [&](od::value& v, od::json_type want, std::string_view key) {
    od::json_type t;
    if (auto e = v.type().get(t)) FS_JSON_FAIL(impl_->where(v), e);
    if (t != want)
      fail(impl_->where(v), "field \"" + std::string(key) + "\" is " + type_name(t) +
                                ", expected " + type_name(want));
  };
  auto read_int = [&](od::value& v, std::string_view key) -> std::optional<int64_t> {
    od::json_type t;
    if (auto e = v.type().get(t)) FS_JSON_FAIL(impl_->where(v), e);
    if (t == od::json_type::null) return std::nullopt;
    if (t != od::json_type::number)
      fail(impl_->where(v),
           "field \"" + std::string(key) + "\" is " + type_name(t) + ", expected a number");
    std::string_view tok;
    tok = v.raw_json_token();
    ArgValue a;
    if (!parse_number_text(tok, a))
      fail(impl_->where(v), "bad number in \"" + std::string(key) + "\"");
    if (!a.fits_int())
      fail(impl_->where(v),
           "field \"" + std::string(key) + "\" is out of range, expected an integer");
    return a.as_int();
  };
  for (auto field_res : root) {
    od::field field;
    if ((err = std::move(field_res).get(field))) FS_JSON_FAIL(impl_->where(doc), err);
    std::string_view key;
    key = field.unescaped_key();
    od::value v = field.value();
    if (key == "traceEvents") {
      expect(v, od::json_type::array, key);
      // Both readers take the first "traceEvents" array as the events; one met here is a second
      // (its events were dropped without a word).
      fail(impl_->where(v),
           "field \"traceEvents\" given twice, expected one array of events (which one a reader "
           "takes differs)");
    } else if (key == "deviceProperties" || key == "computeProperties") {
      meta.has_device_properties = true;
      expect(v, od::json_type::array, key);
      od::array arr;
      if ((err = v.get_array().get(arr))) FS_JSON_FAIL(impl_->where(v), err);
      for (auto dev_res : arr) {
        od::value dv;
        if ((err = std::move(dev_res).get(dv))) FS_JSON_FAIL(impl_->where(doc), err);
        expect(dv, od::json_type::object, std::string(key) + "[]");
        od::object dobj;
        if ((err = dv.get_object().get(dobj))) FS_JSON_FAIL(impl_->where(dv), err);
        store::GpuInfo gpu;
        std::optional<int64_t> threads_per_sm;
        for (auto df_res : dobj) {
          od::field df;
          if ((err = std::move(df_res).get(df))) FS_JSON_FAIL(impl_->where(dv), err);
          std::string_view dk;
          dk = df.unescaped_key();
          od::value x = df.value();
          if (dk == "name") {
            std::string_view s;
            if (x.get_string().get(s) == simdjson::SUCCESS) gpu.name = std::string(s);
            continue;
          }
          od::json_type t;
          if ((err = x.type().get(t))) FS_JSON_FAIL(impl_->where(x), err);
          if (t != od::json_type::number) continue;  // unknown extras are tolerated
          auto val = read_int(x, dk);
          if (!val) continue;
          const int64_t n = *val;
          // Every field below is an int32 in cudaDeviceProp except the two 64-bit sizes.
          const bool wide = dk == "totalGlobalMem" || dk == "sharedMemPerMultiprocessor" ||
                            dk == "maxSharedMemoryPerMultiProcessor" || dk == "clockRate";
          // The ids, counts and sizes read below: none is negative (totalGlobalMem -1 showed as
          // "-0.0 GiB"); other fields are kept out of it.
          static constexpr std::string_view read_below[] = {"id",
                                                            "totalGlobalMem",
                                                            "computeMajor",
                                                            "major",
                                                            "computeMinor",
                                                            "minor",
                                                            "maxThreadsPerBlock",
                                                            "maxThreadsPerMultiprocessor",
                                                            "maxThreadsPerMultiProcessor",
                                                            "regsPerMultiprocessor",
                                                            "warpSize",
                                                            "sharedMemPerMultiprocessor",
                                                            "maxSharedMemoryPerMultiProcessor",
                                                            "numSms",
                                                            "multiProcessorCount",
                                                            "clockRate"};
          const bool read =
              std::find(std::begin(read_below), std::end(read_below), dk) != std::end(read_below);
          if ((read && n < 0) || (!wide && n > INT32_MAX) ||
              (dk == "clockRate" && n > INT64_MAX / 1000))
            fail(impl_->where(x), "field \"" + std::string(key) + "[]." + std::string(dk) +
                                      "\" is out of range (" + std::to_string(n) +
                                      "), expected 0 or more" +
                                      (wide ? "" : " and at most 2147483647"));
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
      if ((err = v.type().get(t))) FS_JSON_FAIL(impl_->where(v), err);
      if (t != od::json_type::object) continue;
      od::object dobj;
      if ((err = v.get_object().get(dobj))) FS_JSON_FAIL(impl_->where(v), err);
      // PyTorch's profiler writes {"backend", "rank": dist.get_rank(), "world_size":
      // dist.get_world_size(), ...} (torch/profiler/profiler.py, _get_distributed_info): a world
      // of 1 or more processes and a rank in [0, world_size). A rank 5 of 4 was imported as given
      // (a fleet view of a job with 4 ranks then showed a fifth).
      std::optional<int64_t> rank, world_size;
      size_t rank_at = 0;
      for (auto df_res : dobj) {
        od::field df;
        if ((err = std::move(df_res).get(df))) FS_JSON_FAIL(impl_->where(v), err);
        std::string_view dk;
        dk = df.unescaped_key();
        od::value x = df.value();
        if (dk == "rank") {
          rank_at = impl_->where(x);
          rank = read_int(x, "distributedInfo.rank");
          if (rank && (*rank < 0 || *rank > INT32_MAX))
            fail(rank_at, "field \"distributedInfo.rank\" is out of range (" +
                              std::to_string(*rank) + "), expected a rank from 0 to 2147483647");
        } else if (dk == "world_size") {
          const size_t at = impl_->where(x);
          world_size = read_int(x, "distributedInfo.world_size");
          if (world_size && (*world_size < 1 || *world_size > INT32_MAX))
            fail(at, "field \"distributedInfo.world_size\" is out of range (" +
                         std::to_string(*world_size) +
                         "), expected a number of processes from 1 to 2147483647");
        }
      }
      if (rank && world_size && *rank >= *world_size)
        fail(rank_at, "field \"distributedInfo.rank\" is out of range (" + std::to_string(*rank) +
                          "), expected a rank below distributedInfo.world_size (" +
                          std::to_string(*world_size) + ")");
      if (rank) meta.rank = static_cast<int32_t>(*rank);
      if (world_size) meta.world_size = static_cast<int32_t>(*world_size);
    } else if (key == "baseTimeNanoseconds") {
      const size_t at = impl_->where(v);
      if (auto b = read_int(v, key)) {
        // Kineto's base is a CLOCK_REALTIME time (ns since 1970): never negative.
        if (*b < 0)
          fail(at, "field \"baseTimeNanoseconds\" is negative (" + std::to_string(*b) +
                       "), expected a time in ns since 1970 (0 or more)");
        meta.base_time_ns = *b;
        meta.has_base_time = true;
      }
    } else if (key == "displayTimeUnit" || key == "host_name" || key == "hostname" ||
               key == "username") {
      od::json_type t;
      if ((err = v.type().get(t))) FS_JSON_FAIL(impl_->where(v), err);
      if (t != od::json_type::string) continue;
      std::string_view s;
      if ((err = v.get_string().get(s))) FS_JSON_FAIL(impl_->where(v), err);
      if (key == "displayTimeUnit")
        meta.display_time_unit = std::string(s);
      else if (key == "username")
        meta.user = std::string(s);
      else
        meta.host_name = std::string(s);
    }
  }
  // (A "traceEvents" array is never among the members: the readers take it out.)
  if (require_events)
    fail(0, "missing required field \"traceEvents\" (not a Chrome-trace / Kineto JSON file)");
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

ArgMember arg_slot(const char* k) {
  switch (k[0]) {
    case 'g':
      if (key_is(k, "grid")) return &RawArgs::grid;
      break;
    case 'k':
      if (key_is(k, "kind")) return &RawArgs::kind;
      break;
    case 's':
      if (key_is(k, "size")) return &RawArgs::size;
      if (key_is(k, "stream")) return &RawArgs::stream;
      if (key_is(k, "shared memory")) return &RawArgs::shared_memory;
      break;
    case 'A':
      if (key_is(k, "Addr")) return &RawArgs::addr;
      break;
    case 'n':
      if (key_is(k, "name")) return &RawArgs::meta_name;
      break;
    case 'b':
      if (key_is(k, "block")) return &RawArgs::block;
      if (key_is(k, "bytes")) return &RawArgs::bytes;
      if (key_is(k, "blocks per SM")) return &RawArgs::blocks_per_sm;
      break;
    case 'B':
      if (key_is(k, "Bytes")) return &RawArgs::bytes;
      break;
    case 'd':
      if (key_is(k, "device")) return &RawArgs::device;
      break;
    case 'l':
      if (key_is(k, "labels")) return &RawArgs::labels;
      break;
    case 'c':
      if (key_is(k, "context")) return &RawArgs::context;
      if (key_is(k, "cbid")) return &RawArgs::cbid;
      if (key_is(k, "correlation")) return &RawArgs::correlation;
      if (key_is(k, "cuda_sync_kind")) return &RawArgs::sync_kind;
      break;
    case 'E':
      if (key_is(k, "External id")) return &RawArgs::external_id;
      break;
    case 'e':
      if (key_is(k, "external id")) return &RawArgs::external_id;
      if (key_is(k, "est. achieved occupancy %")) return &RawArgs::est_occupancy;
      break;
    case 'r':
      if (key_is(k, "registers per thread")) return &RawArgs::registers;
      break;
    case 'w':
      if (key_is(k, "warps per SM")) return &RawArgs::warps_per_sm;
      if (key_is(k, "wait_on_cuda_event_id")) return &RawArgs::wait_event_id;
      if (key_is(k, "wait_on_cuda_event_record_corr_id")) return &RawArgs::wait_record_correlation;
      if (key_is(k, "wait_on_stream")) return &RawArgs::wait_on_stream;
      break;
    case 'D':
      if (key_is(k, "Device Type")) return &RawArgs::device_type;
      if (key_is(k, "Device Id")) return &RawArgs::device_id;
      break;
    case 'T':
      if (key_is(k, "Total Allocated")) return &RawArgs::total_allocated;
      if (key_is(k, "Total Reserved")) return &RawArgs::total_reserved;
      break;
    default:
      break;
  }
  return nullptr;
}

}  // namespace

namespace {

// Where the event walker stands: the batch it parses and how that maps to the document. The
// walker may run on its own thread (see for_each_event), so it keeps this apart from the
// tokenizer's own state, which belongs to the thread that called for_each_event.
struct WalkContext {
  const std::string& path;
  od::parser& parser;
  const std::string* document = nullptr;  // whole-document mode: lines are counted from it
  size_t document_size = 0;
  const char* base = nullptr;
  size_t size = 0;
  Segment segment;
  // Where strings with escapes are unescaped to when events outlive the walk (the parser's own
  // string buffer is reused by the next batch); null: the parser's buffer is good enough.
  std::deque<std::string>* arena = nullptr;

  // A string value's text: a view into the batch itself when it has no escapes (Kineto's
  // strings almost never do), else unescaped by simdjson (and copied to the arena if any).
  simdjson::error_code string_of(od::value& v, std::string_view& out) const {
    const std::string_view token = v.raw_json_token();
    if (token.size() >= 2 && token[0] == '"') {
      const char* begin = token.data() + 1;
      const auto* quote = static_cast<const char*>(std::memchr(begin, '"', token.size() - 1));
      if (quote && !std::memchr(begin, '\\', static_cast<size_t>(quote - begin))) {
        out = std::string_view(begin, static_cast<size_t>(quote - begin));
        return simdjson::SUCCESS;
      }
    }
    if (auto err = v.get_string().get(out)) return err;
    if (arena) out = arena->emplace_back(out);
    return simdjson::SUCCESS;
  }

  size_t to_document(size_t buffer_pos) const {
    if (buffer_pos < segment.buffer_start) return static_cast<size_t>(segment.document_offset);
    const size_t within = std::min(buffer_pos - segment.buffer_start, segment.size);
    return static_cast<size_t>(segment.document_offset) + within;
  }
  template <class T>
  size_t where(T& iterable) const {
    const char* loc = nullptr;
    if (iterable.current_location().get(loc) == simdjson::SUCCESS && loc && loc >= base &&
        loc <= base + size)
      return to_document(static_cast<size_t>(loc - base));
    return to_document(size);
  }
  std::string position(size_t offset) const {
    if (document) return position_in_document(*document, document_size, offset);
    return position_in_segments(&segment, &segment + 1, offset);
  }
  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw InputError(path, position(offset), what);
  }
};

// An error simdjson reports without a usable position is moved to its byte (json_error_position.h).
#define FS_WALK_FAIL(where, err)                                                    \
  do {                                                                              \
    if (auto located = locate_json_error(ctx.base, ctx.size, err))                  \
      ctx.fail(ctx.to_document(located->offset), "invalid JSON: " + located->what); \
    ctx.fail(where, std::string("invalid JSON: ") + simdjson::error_message(err));  \
  } while (false)

// Walks one batch of events with simdjson On-Demand, calling emit(const RawEvent&) per event in
// file order. Throws InputError (naming the file and position) on a malformed event.
template <class Emit>
void walk_batch(WalkContext& ctx, EventBatch& batch, Emit&& emit) {
  auto err = simdjson::SUCCESS;
  // One RawEvent reused for every event; only the args slots an event filled are cleared after
  // it (RawArgs is ~1.6 KB: clearing all of it per event was a measurable share of the pass).
  RawEvent raw;
  ArgMember touched[sizeof(RawArgs) / sizeof(ArgValue)];
  size_t touched_count = 0;
  ctx.base = batch.view ? batch.view : batch.text.data();
  const char* const base = ctx.base;
  const size_t capacity = batch.view ? batch.view_capacity : batch.text.size();
  ctx.size = batch.json_size;
  const size_t size = ctx.size;
  ctx.segment = segment_of(batch);
  auto location_of = [&](auto& iterable, const char*, size_t) { return ctx.where(iterable); };
  od::document doc;
  if ((err = ctx.parser.iterate(simdjson::padded_string_view(base, size, capacity)).get(doc)))
    FS_WALK_FAIL(ctx.to_document(0), err);
  od::array events;
  if ((err = doc.get_array().get(events))) FS_WALK_FAIL(location_of(doc, base, size), err);
  size_t index = batch.first_index;
  for (auto ev_res : events) {
    od::value ev;
    if ((err = std::move(ev_res).get(ev))) FS_WALK_FAIL(location_of(doc, base, size), err);
    size_t offset = location_of(ev, base, size);
    auto bad_type = [&](EventKey key, od::json_type t, const char* want) {
      ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
                           event_key_name(key) + "\" is " + type_name(t) + ", expected " + want);
    };
    od::json_type t;
    if ((err = ev.type().get(t))) FS_WALK_FAIL(offset, err);
    if (t != od::json_type::object)
      ctx.fail(offset, "traceEvents[" + std::to_string(index) + "] is " + type_name(t) +
                           ", expected an event object");
    od::object obj;
    if ((err = ev.get_object().get(obj))) FS_WALK_FAIL(offset, err);
    for (size_t i = 0; i < touched_count; ++i) raw.args.*touched[i] = ArgValue{};
    touched_count = 0;
    raw.ph = raw.cat = raw.name = {};
    raw.has_name = false;
    raw.ts_ns.reset();
    raw.dur_ns.reset();
    raw.pid = raw.tid = RawId{};
    raw.index = index;
    raw.offset = offset;
    bool skip_rest = false;  // a phase the importer does not translate: the rest is skipped
    unsigned keys_seen = 0;  // the EventKeys met in this event (bit per key)
    for (auto f_res : obj) {
      // Used in place (value_unsafe() after the error check): copying ondemand fields and values
      // around was a visible share of this loop.
      if ((err = f_res.error())) FS_WALK_FAIL(location_of(ev, base, size), err);
      od::field& f = f_res.value_unsafe();
      const EventKey key = event_key(f.key().raw());
      if (key == EventKey::other) continue;  // "id", "bp", "s", ...: skipped by the iterator
      // A field given twice ("ts": 5, "ts": 7) has no one meaning: JSON leaves it open and
      // readers differ (the first or the last wins); the walker took the last without a word.
      if (keys_seen & (1u << static_cast<unsigned>(key)))
        ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
                             event_key_name(key) + "\" given twice, expected each field once");
      keys_seen |= 1u << static_cast<unsigned>(key);
      od::value& v = f.value();
      if ((err = v.type().get(t))) FS_WALK_FAIL(location_of(v, base, size), err);
      switch (key) {
        case EventKey::ph:
        case EventKey::cat:
        case EventKey::name: {
          if (t != od::json_type::string) {
            if (key == EventKey::cat && t == od::json_type::null) continue;
            bad_type(key, t, "a string");
          }
          std::string_view s;
          if ((err = ctx.string_of(v, s))) FS_WALK_FAIL(location_of(v, base, size), err);
          if (key == EventKey::ph) {
            raw.ph = s;
            skip_rest = !phase_is_read(s);
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
            ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
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
            if (!a.fits_int())
              ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
                                   event_key_name(key) + "\" is out of range, expected an integer");
            // A pid or tid of 1.5 was truncated to 1 (and a tid is a stream id on GPU rows).
            if (a.kind == ArgValue::Kind::real && a.d != std::trunc(a.d))
              ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"" +
                                   event_key_name(key) + "\" is not a whole number (" +
                                   number_excerpt(v.raw_json_token()) + "), expected an integer");
            id.present = true;
            id.is_int = true;
            id.value = a.as_int();
          } else if (t == od::json_type::string) {
            std::string_view s;
            if ((err = ctx.string_of(v, s))) FS_WALK_FAIL(location_of(v, base, size), err);
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
          if ((err = v.get_object().get(args))) FS_WALK_FAIL(location_of(v, base, size), err);
          for (auto a_res : args) {
            if ((err = a_res.error())) FS_WALK_FAIL(location_of(v, base, size), err);
            od::field& af = a_res.value_unsafe();
            const ArgMember member = arg_slot(af.key().raw());
            if (!member) continue;  // skipped by the iterator
            ArgValue* slot = &(raw.args.*member);
            if (slot->kind == ArgValue::Kind::absent) {
              touched[touched_count++] = member;
            } else if (member != &RawArgs::bytes && member != &RawArgs::external_id) {
              // The same key twice (two spellings of one slot, "bytes"/"Bytes" and "External
              // id"/"external id", are left to the last, as before).
              const char* k = af.key().raw();
              ctx.fail(offset, "traceEvents[" + std::to_string(index) + "]: field \"args." +
                                   std::string(k, std::strcspn(k, "\"")) +
                                   "\" given twice, expected each field once");
            }
            od::value& av = af.value();
            od::json_type at;
            if ((err = av.type().get(at))) FS_WALK_FAIL(location_of(av, base, size), err);
            switch (at) {
              case od::json_type::number:
                if (!parse_number_text(av.raw_json_token(), *slot))
                  slot->kind = ArgValue::Kind::other;
                break;
              case od::json_type::string:
                if ((err = ctx.string_of(av, slot->s)))
                  FS_WALK_FAIL(location_of(av, base, size), err);
                slot->kind = ArgValue::Kind::string;
                break;
              case od::json_type::array: {
                od::array arr;
                if ((err = av.get_array().get(arr))) FS_WALK_FAIL(location_of(av, base, size), err);
                int n = 0;
                bool ok = true;
                for (auto x_res : arr) {
                  od::value x;
                  if ((err = std::move(x_res).get(x)))
                    FS_WALK_FAIL(location_of(av, base, size), err);
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
      if (skip_rest) break;  // On-Demand skips what is left of the object
    }
    emit(raw, touched, touched_count);
    ++index;
  }
  if (batch.count != EventBatch::kUnknownCount && index != batch.first_index + batch.count)
    ctx.fail(static_cast<size_t>(batch.offset),
             "invalid JSON: traceEvents elements could not be separated");
}

#undef FS_WALK_FAIL

// Events parsed ahead by the walker thread, handed to the calling thread in file order. An
// event's args are kept as the slots it filled (most events fill a handful of the ~25).
struct ParsedChunk {
  struct Event {
    size_t index = 0, offset = 0;
    std::string_view ph, cat, name;
    bool has_name = false;
    std::optional<int64_t> ts_ns, dur_ns;
    RawId pid, tid;
    uint32_t args_end = 0;  // this event's args are args[previous event's args_end, args_end)
  };
  std::vector<Event> events;
  std::vector<std::pair<ArgMember, ArgValue>> args;
  std::deque<std::string> strings;   // strings that had escapes, unescaped
  Segment segment;                   // for error positions while these events are handled
  std::optional<EventBatch> source;  // the last chunk of a batch owns its buffer
  bool end = false;                  // the traceEvents array is done
  std::vector<MetaMember> trailing;  // with `end`: the members after it
  std::exception_ptr error;          // raised after `events` were handled
  void clear() {
    events.clear();
    args.clear();
    strings.clear();
    source.reset();
    end = false;
    trailing.clear();
    error = nullptr;
  }
};

// Parsed chunks in flight between the walker thread and the caller: bounded, in order.
class ChunkQueue {
 public:
  explicit ChunkQueue(size_t capacity) : capacity_(capacity) {}
  // Walker side: a chunk to fill (a recycled one when there is one).
  std::unique_ptr<ParsedChunk> blank() {
    std::lock_guard lock(mu_);
    if (free_.empty()) return std::make_unique<ParsedChunk>();
    auto c = std::move(free_.back());
    free_.pop_back();
    return c;
  }
  // False when the caller gave up (stop()).
  bool push(std::unique_ptr<ParsedChunk> chunk) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stopped_ || ready_.size() < capacity_; });
    if (stopped_) return false;
    ready_.push_back(std::move(chunk));
    changed_.notify_all();
    return true;
  }
  bool stopped() const {
    std::lock_guard lock(mu_);
    return stopped_;
  }
  std::unique_ptr<ParsedChunk> pop() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !ready_.empty(); });
    auto c = std::move(ready_.front());
    ready_.pop_front();
    changed_.notify_all();
    return c;
  }
  void recycle(std::unique_ptr<ParsedChunk> chunk) {
    chunk->clear();
    std::lock_guard lock(mu_);
    if (free_.size() < capacity_ + 2) free_.push_back(std::move(chunk));
  }
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    changed_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<ParsedChunk>> ready_;
  std::vector<std::unique_ptr<ParsedChunk>> free_;
  size_t capacity_;
  bool stopped_ = false;
};

// Events per hand-off from the walker thread: large enough that the queue's locking vanishes,
// small enough that the two threads start overlapping at once.
constexpr size_t kEventsPerChunk = 2048;

}  // namespace

void Tokenizer::for_each_event(const std::function<void(const RawEvent&)>& fn) {
  impl_->start(*this);
  if (impl_->events_done) return;
  WalkContext ctx{path_, impl_->parser};
  if (impl_->whole) {
    ctx.document = &impl_->document;
    ctx.document_size = impl_->document_size;
  }
  const size_t input_bytes =
      impl_->whole ? impl_->document_size
                   : static_cast<size_t>(std::max<int64_t>(0, impl_->input.file_bytes()));
  const bool threaded = input_bytes >= impl_->options.parse_thread_min_bytes &&
                        std::thread::hardware_concurrency() >= 2;
  if (!threaded) {
    for (;;) {
      Item item = impl_->pop();
      if (item.kind == Item::Kind::end) {
        impl_->trailing = std::move(item.members);
        impl_->events_done = true;
        return;
      }
      if (item.kind != Item::Kind::batch) continue;
      impl_->current = std::move(item.batch);
      impl_->segments.assign(1, segment_of(impl_->current));  // Tokenizer::position()
      walk_batch(ctx, impl_->current,
                 [&](const RawEvent& raw, const ArgMember*, size_t) { fn(raw); });
      impl_->recycle(std::move(impl_->current));
    }
  }

  // Two stages on two threads: the walker (simdjson over each batch, numbers converted) runs
  // ahead on its own thread and hands over chunks of parsed events; this thread turns them into
  // rows (the callback). Order is kept: one walker, one FIFO.
  ChunkQueue queue(8);
  std::thread walker([&] {
    std::unique_ptr<ParsedChunk> chunk = queue.blank();
    ctx.arena = &chunk->strings;
    auto hand_over = [&]() {
      if (!queue.push(std::move(chunk))) return false;
      chunk = queue.blank();
      ctx.arena = &chunk->strings;
      return true;
    };
    try {
      for (;;) {
        if (queue.stopped()) return;
        Item item = impl_->pop();
        if (item.kind == Item::Kind::end) {
          chunk->end = true;
          chunk->trailing = std::move(item.members);
          hand_over();
          return;
        }
        if (item.kind != Item::Kind::batch) continue;
        EventBatch batch = std::move(item.batch);
        bool stopped = false;
        walk_batch(ctx, batch, [&](const RawEvent& raw, const ArgMember* touched, size_t n) {
          if (stopped) return;
          if (chunk->events.empty()) chunk->segment = ctx.segment;
          ParsedChunk::Event& e = chunk->events.emplace_back();
          e.index = raw.index;
          e.offset = raw.offset;
          e.ph = raw.ph;
          e.cat = raw.cat;
          e.name = raw.name;
          e.has_name = raw.has_name;
          e.ts_ns = raw.ts_ns;
          e.dur_ns = raw.dur_ns;
          e.pid = raw.pid;
          e.tid = raw.tid;
          for (size_t i = 0; i < n; ++i) chunk->args.emplace_back(touched[i], raw.args.*touched[i]);
          e.args_end = static_cast<uint32_t>(chunk->args.size());
          if (chunk->events.size() >= kEventsPerChunk && !hand_over()) stopped = true;
        });
        if (stopped) return;
        // The batch's buffer stays alive until its last events were handled.
        chunk->segment = ctx.segment;
        chunk->source = std::move(batch);
        if (!hand_over()) return;
      }
    } catch (...) {
      chunk->error = std::current_exception();
      queue.push(std::move(chunk));
    }
  });
  try {
    RawEvent raw;
    ArgMember touched[sizeof(RawArgs) / sizeof(ArgValue)];
    size_t touched_count = 0;
    for (;;) {
      std::unique_ptr<ParsedChunk> chunk = queue.pop();
      impl_->segments.assign(1, chunk->segment);  // Tokenizer::position() for the callback
      uint32_t arg = 0;
      for (const ParsedChunk::Event& e : chunk->events) {
        for (size_t i = 0; i < touched_count; ++i) raw.args.*touched[i] = ArgValue{};
        touched_count = 0;
        for (; arg < e.args_end; ++arg) {
          const auto& [member, value] = chunk->args[arg];
          if ((raw.args.*member).kind == ArgValue::Kind::absent) touched[touched_count++] = member;
          raw.args.*member = value;
        }
        raw.index = e.index;
        raw.offset = e.offset;
        raw.ph = e.ph;
        raw.cat = e.cat;
        raw.name = e.name;
        raw.has_name = e.has_name;
        raw.ts_ns = e.ts_ns;
        raw.dur_ns = e.dur_ns;
        raw.pid = e.pid;
        raw.tid = e.tid;
        fn(raw);
      }
      if (chunk->error) std::rethrow_exception(chunk->error);
      if (chunk->source) impl_->recycle(std::move(*chunk->source));
      if (chunk->end) {
        impl_->trailing = std::move(chunk->trailing);
        impl_->events_done = true;
        queue.recycle(std::move(chunk));
        break;
      }
      queue.recycle(std::move(chunk));
    }
  } catch (...) {
    queue.stop();
    walker.join();
    throw;
  }
  walker.join();
}

}  // namespace fleetscope::importers::kineto

namespace fleetscope::importers::kineto {

std::optional<int64_t> peek_trailing_base_time(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::string tail(65536, '\0');
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, f);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    std::fclose(f);
    return std::nullopt;
  }
  if (std::fseek(f, 0, SEEK_END) != 0) {
    std::fclose(f);
    return std::nullopt;
  }
  const long size = std::ftell(f);
  const long start = std::max<long>(0, size - static_cast<long>(tail.size()));
  std::fseek(f, start, SEEK_SET);
  n = std::fread(tail.data(), 1, tail.size(), f);
  std::fclose(f);
  tail.resize(n);
  // The last occurrence of the key, followed by ':' and an integer. A wrong guess (the text
  // inside some string) is caught when the real member is parsed: the importer then corrects
  // every row already written (Importer: shift of the capture's times).
  const std::string key = "\"baseTimeNanoseconds\"";
  const size_t at = tail.rfind(key);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + key.size();
  while (i < tail.size() &&
         (tail[i] == ' ' || tail[i] == '\n' || tail[i] == '\r' || tail[i] == '\t'))
    ++i;
  if (i >= tail.size() || tail[i] != ':') return std::nullopt;
  ++i;
  while (i < tail.size() &&
         (tail[i] == ' ' || tail[i] == '\n' || tail[i] == '\r' || tail[i] == '\t'))
    ++i;
  int64_t value = 0;
  auto [p, ec] = std::from_chars(tail.data() + i, tail.data() + tail.size(), value);
  if (ec != std::errc() || p == tail.data() + i) return std::nullopt;
  return value;
}

}  // namespace fleetscope::importers::kineto
