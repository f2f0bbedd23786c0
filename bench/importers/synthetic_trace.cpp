#include "synthetic_trace.h"

#include <simdjson.h>
#include <zlib.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetscope::bench {

namespace {

std::string read_maybe_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// One event as text pieces between the numbers that change per replica.
enum class Field { none, ts, correlation, external_id };
struct Piece {
  std::string text;  // written before the number
  Field field = Field::none;
  double base = 0;  // the number in the source
};
using Template = std::vector<Piece>;

// A JSON string literal (keys of Kineto traces need at most the two escapes below).
std::string quoted(std::string_view key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void append_object(simdjson::dom::object obj, Template& t, bool in_args) {
  t.back().text += '{';
  bool first = true;
  for (auto [key, value] : obj) {
    if (!first) t.back().text += ',';
    first = false;
    t.back().text += quoted(key) + ":";
    Field f = Field::none;
    if (!in_args && key == "ts") f = Field::ts;
    if (in_args && key == "correlation") f = Field::correlation;
    if (in_args && key == "External id") f = Field::external_id;
    if (f != Field::none && value.is_number()) {
      double v = 0;
      if (value.get_double().get(v) == simdjson::SUCCESS) {
        t.back().field = f;
        t.back().base = v;
        t.push_back({});
        continue;
      }
    }
    if (!in_args && key == "args" && value.is_object()) {
      append_object(value.get_object().value_unsafe(), t, true);
      continue;
    }
    t.back().text += simdjson::minify(value);
  }
  t.back().text += '}';
}

void put_number(std::string& out, double v, bool integral) {
  char buf[64];
  std::to_chars_result r{};
  if (integral)
    r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(std::llround(v)));
  else
    r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
  out.append(buf, r.ptr);
}

// The source as the cache knows it: canonical path, size and modification time.
std::string source_identity(const std::string& source) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path canonical = fs::canonical(source, ec);
  auto size = fs::file_size(source, ec);
  auto mtime = fs::last_write_time(source, ec).time_since_epoch().count();
  return (canonical.empty() ? source : canonical.string()) + "|" + std::to_string(size) + "|" +
         std::to_string(mtime);
}

}  // namespace

std::string synthetic_trace_path(const std::string& dir, const std::string& source,
                                 int64_t events) {
  std::string stem = std::filesystem::path(source).filename().string();
  for (const char* ext : {".gz", ".json"})
    if (stem.size() > std::strlen(ext) && stem.ends_with(ext))
      stem.resize(stem.size() - std::strlen(ext));
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(std::hash<std::string>{}(source_identity(source))));
  return dir + "/fleetscope-synth-" + stem + "-" + std::string(hash, 8) + "-" +
         std::to_string(events) + ".json";
}

SyntheticTrace make_synthetic_trace(const std::string& source, int64_t events,
                                    const std::string& out_path) {
  SyntheticTrace result;
  result.path = out_path;
  result.events = events;
  const std::string stamp = out_path + ".events";
  {
    std::ifstream in(stamp);
    int64_t have = -1, source_events = 0;
    std::string made_from;
    if (in >> have >> source_events && std::getline(in >> std::ws, made_from) && have == events &&
        made_from == source_identity(source) && std::filesystem::exists(out_path)) {
      result.bytes = static_cast<int64_t>(std::filesystem::file_size(out_path));
      result.source_events = source_events;
      return result;
    }
  }
  const std::string text = read_maybe_gzip(source);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  simdjson::dom::array list = doc["traceEvents"].get_array();

  std::vector<Template> templates;
  double ts_min = INFINITY, ts_max = -INFINITY, corr_max = 0, ext_max = 0;
  for (simdjson::dom::element e : list) {
    if (!e.is_object()) continue;
    Template t(1);
    append_object(e.get_object().value_unsafe(), t, false);
    for (const Piece& p : t) {
      if (p.field == Field::ts)
        ts_min = std::min(ts_min, p.base), ts_max = std::max(ts_max, p.base);
      if (p.field == Field::correlation) corr_max = std::max(corr_max, p.base);
      if (p.field == Field::external_id) ext_max = std::max(ext_max, p.base);
    }
    templates.push_back(std::move(t));
  }
  if (templates.empty()) throw std::runtime_error(source + ": no events to replicate");
  result.source_events = static_cast<int64_t>(templates.size());
  // Replicas follow each other in time, 1 ms apart, with fresh correlation and external ids.
  const double ts_step = (ts_max - ts_min) + 1000.0 + 10.0 * 1000.0;
  const double corr_step = corr_max + 1, ext_step = ext_max + 1;

  std::FILE* out = std::fopen(out_path.c_str(), "wb");
  if (!out) throw std::runtime_error("cannot write " + out_path);
  std::string buf = "{\"schemaVersion\":1";
  std::string trailing;
  for (auto [key, value] : doc.get_object()) {
    if (key == "traceEvents" || key == "schemaVersion") continue;
    std::string member = "," + quoted(key) + ":" + simdjson::minify(value);
    if (key == "baseTimeNanoseconds" || key == "displayTimeUnit" || key == "traceName")
      trailing += member;  // Kineto writes these after traceEvents
    else
      buf += member;
  }
  buf += ",\"traceEvents\":[\n";
  int64_t written = 0;
  for (int64_t replica = 0; written < events; ++replica) {
    for (const Template& t : templates) {
      if (written == events) break;
      if (written) buf += ",\n";
      for (const Piece& p : t) {
        buf += p.text;
        switch (p.field) {
          case Field::ts:
            put_number(buf, p.base + static_cast<double>(replica) * ts_step, false);
            break;
          case Field::correlation:
            put_number(buf, p.base + static_cast<double>(replica) * corr_step, true);
            break;
          case Field::external_id:
            put_number(buf, p.base + static_cast<double>(replica) * ext_step, true);
            break;
          case Field::none:
            break;
        }
      }
      ++written;
      if (buf.size() > (1u << 22)) {
        std::fwrite(buf.data(), 1, buf.size(), out);
        result.bytes += static_cast<int64_t>(buf.size());
        buf.clear();
      }
    }
  }
  buf += "\n]" + trailing + "}\n";
  std::fwrite(buf.data(), 1, buf.size(), out);
  result.bytes += static_cast<int64_t>(buf.size());
  if (std::fclose(out) != 0) throw std::runtime_error("cannot write " + out_path);
  std::ofstream(stamp) << events << ' ' << result.source_events << ' ' << source_identity(source)
                       << '\n';
  return result;
}

}  // namespace fleetscope::bench
