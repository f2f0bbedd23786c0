#include "fleetscope/cli/store_commands.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "fleetscope/analyzer/loader.h"
#include "fleetscope/common/args.h"
#include "fleetscope/common/capture_choice.h"
#include "fleetscope/common/csv.h"
#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/query_stream.h"
#include "fleetscope/store/read_policy.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::cli {
namespace {

std::string format_duration(int64_t ns) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3);
  if (ns >= 1'000'000'000)
    os << static_cast<double>(ns) / 1e9 << " s";
  else if (ns >= 1'000'000)
    os << static_cast<double>(ns) / 1e6 << " ms";
  else
    os << static_cast<double>(ns) / 1e3 << " us";
  return os.str();
}

std::string format_bytes(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1024.0 * 1024 * 1024)
     << " GiB";
  return os.str();
}

// The friendly label of an event table in `info`.
const std::map<std::string, std::string>& table_labels() {
  static const std::map<std::string, std::string> labels = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", "kernels"},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"},
      {"CUPTI_ACTIVITY_KIND_MEMSET", "memset"},
      {"CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_api_calls"},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "syncs"},
      {"NVTX_EVENTS", "nvtx_events"},
      {"cpu_ops", "cpu_ops"},
      {"iterations", "iterations"},
      {"memory_events", "memory_events"},
      {"device_samples", "device_samples"},
      {"external_correlation", "external_correlations"},
      {"TARGET_INFO_GPU", "gpus"},
      {"findings", "findings"}};
  return labels;
}

nlohmann::json info_json(const store::Reader& reader, const std::vector<int64_t>& capture_ids) {
  using nlohmann::json;
  json j;
  j["schema_version"] = reader.schema_version();
  json captures = json::array();
  for (const store::Capture& c : reader.captures()) {
    if (std::find(capture_ids.begin(), capture_ids.end(), c.id) == capture_ids.end()) continue;
    json cj = {{"id", c.id},
               {"kind", store::to_string(c.kind)},
               {"source", c.source},
               {"source_path", c.source_path},
               {"dropped_records", c.dropped_records},
               {"collector_overhead_ns", c.collector_overhead_ns}};
    cj["start_ns"] = c.start_ns ? json(*c.start_ns) : json(nullptr);
    cj["end_ns"] = c.end_ns ? json(*c.end_ns) : json(nullptr);
    cj["duration_ns"] = c.start_ns && c.end_ns ? json(*c.end_ns - *c.start_ns) : json(nullptr);
    cj["gpu_vendor"] = c.gpu_vendor ? json(*c.gpu_vendor) : json(nullptr);
    if (c.note) cj["note"] = *c.note;
    json counts = json::object();
    for (const store::TableCount& tc : reader.counts(c.id))
      counts[table_labels().at(tc.table)] = tc.rows;
    cj["counts"] = counts;
    json devices = json::array();
    for (const store::GpuInfo& g : reader.gpus(c.id)) {
      json d = {{"id", g.id}, {"name", g.name}, {"vendor", g.vendor}};
      if (g.smCount) d["sm_count"] = *g.smCount;
      if (g.totalMemory) d["total_memory_bytes"] = *g.totalMemory;
      if (g.computeMajor && g.computeMinor)
        d["compute_capability"] =
            std::to_string(*g.computeMajor) + "." + std::to_string(*g.computeMinor);
      devices.push_back(d);
    }
    cj["devices"] = devices;
    json iterations = json::array();
    for (const store::Iteration& it : reader.iterations(c.id))
      iterations.push_back({{"step", it.step},
                            {"start_ns", it.start},
                            {"end_ns", it.end},
                            {"duration_ns", it.end - it.start}});
    cj["iterations"] = iterations;
    captures.push_back(cj);
  }
  j["captures"] = captures;
  json processes = json::array();
  // The processes of the selected captures (rows of no capture apply to every capture).
  for (const store::Process& p : reader.processes()) {
    if (p.captureId &&
        std::find(capture_ids.begin(), capture_ids.end(), *p.captureId) == capture_ids.end())
      continue;
    json pj = {{"pid", p.pid}};
    pj["rank"] = p.rank ? json(*p.rank) : json(nullptr);
    pj["world_size"] = p.world_size ? json(*p.world_size) : json(nullptr);
    if (p.command) pj["command"] = *p.command;
    processes.push_back(pj);
  }
  j["processes"] = processes;
  return j;
}

void print_info_table(const nlohmann::json& j, const std::string& path, std::ostream& out) {
  out << path << " (";
  if (j.contains("input") && j["input"] != "fleetscope database")
    out << j["input"].get<std::string>() << ", imported in memory; ";
  out << "schema v" << j["schema_version"].get<int>() << ")\n";
  for (const auto& p : j["processes"]) {
    out << "  process " << p["pid"].get<int64_t>();
    if (!p["rank"].is_null()) {
      out << "  rank " << p["rank"].get<int>();
      if (!p["world_size"].is_null()) out << " of " << p["world_size"].get<int>();
    }
    out << "\n";
  }
  for (const auto& c : j["captures"]) {
    out << "capture " << c["id"].get<int64_t>() << "  " << c["kind"].get<std::string>() << "  "
        << c["source"].get<std::string>() << "  " << c["source_path"].get<std::string>() << "\n";
    if (!c["duration_ns"].is_null())
      out << "  span        " << format_duration(c["duration_ns"].get<int64_t>()) << "  ["
          << c["start_ns"].get<int64_t>() << ", " << c["end_ns"].get<int64_t>() << "] ns\n";
    if (c.contains("note")) out << "  note        " << c["note"].get<std::string>() << "\n";
    for (const auto& d : c["devices"]) {
      out << "  gpu " << d["id"].get<int>() << "       " << d["name"].get<std::string>();
      if (d.contains("sm_count")) out << ", " << d["sm_count"].get<int>() << " SMs";
      if (d.contains("total_memory_bytes"))
        out << ", " << format_bytes(d["total_memory_bytes"].get<int64_t>());
      if (d.contains("compute_capability"))
        out << ", cc " << d["compute_capability"].get<std::string>();
      if (d["vendor"] != "nvidia") out << " (" << d["vendor"].get<std::string>() << ")";
      out << "\n";
    }
    const auto& its = c["iterations"];
    if (!its.empty()) {
      out << "  iterations  " << its.size() << " (steps " << its.front()["step"].get<int64_t>()
          << ".." << its.back()["step"].get<int64_t>() << ")\n";
    }
    out << "  counts     ";
    for (const auto& [name, rows] : c["counts"].items())
      if (rows.get<int64_t>() > 0) out << " " << name << "=" << rows.get<int64_t>();
    out << "\n";
    if (c["dropped_records"].get<int64_t>() > 0)
      out << "  dropped     " << c["dropped_records"].get<int64_t>() << " records\n";
  }
}

}  // namespace

int run_info_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  std::string format = "table", capture_text;
  common::ArgParser parser(
      "fleetscope info [--capture ID|all] [--format table|json] DB...",
      "Summarize trace databases (or Kineto traces and nsys SQLite exports, imported in memory): "
      "devices, processes and ranks, time span, iterations and counts per event kind, per "
      "capture.");
  parser.option("--capture", "ID|all", "only this capture (default: all)", &capture_text)
      .option("--format", "FORMAT", "table (default) or json", &format)
      .positionals("DB", "trace databases, Kineto traces or nsys SQLite exports", &files, 1);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json") {
    err << "error: --format must be table or json, got '" << format << "'\n";
    return 2;
  }
  common::CaptureChoice choice;
  try {
    choice = common::parse_capture_choice(capture_text);
  } catch (const std::invalid_argument& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& file : files) {
    try {
      const importers::OpenedInput input = importers::open_input(file);
      const store::Reader reader = input.reader();
      nlohmann::json j = info_json(reader, analyzer::select_captures(reader, choice, true, file));
      j["path"] = file;
      j["input"] = importers::describe(input.kind);
      if (format == "json")
        all.push_back(j);
      else {
        // Device names, command lines and capture notes come from the file: no control
        // character of theirs reaches the terminal raw.
        std::ostringstream table;
        print_info_table(j, file, table);
        out << text::terminal_safe_lines(table.str());
      }
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      return 1;
    }
  }
  if (format == "json")
    out << (all.size() == 1 ? all[0] : all)
               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
  return 0;
}

namespace {

// Table output without holding the result: column widths come from the first kWidthRows rows,
// which are buffered; later rows print with those widths (values are cut at 60 characters).
class TablePrinter {
 public:
  explicit TablePrinter(std::ostream& out) : out_(out) {}
  void columns(const std::vector<std::string>& names) {
    names_ = names;
    width_.assign(names.size(), 0);
    for (size_t c = 0; c < names.size(); ++c) width_[c] = names[c].size();
  }
  void row(const store::QueryRow& row) {
    if (!header_printed_) {
      buffered_.push_back(row);
      for (size_t c = 0; c < row.size(); ++c)
        width_[c] = std::max(width_[c], std::min<size_t>(row[c].value_or("NULL").size(), 60));
      if (buffered_.size() >= kWidthRows) flush();
      return;
    }
    print(row);
  }
  void flush() {
    if (!header_printed_) {
      for (size_t c = 0; c < width_.size(); ++c)
        out_ << std::left << std::setw(static_cast<int>(width_[c]) + 2) << names_[c];
      out_ << "\n";
      header_printed_ = true;
    }
    for (const auto& r : buffered_) print(r);
    buffered_.clear();
  }

 private:
  static constexpr size_t kWidthRows = 1000;
  void print(const store::QueryRow& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      std::string v = row[c].value_or("NULL");
      if (v.size() > 60) v = v.substr(0, 57) + "...";
      out_ << std::left << std::setw(static_cast<int>(width_[c]) + 2) << v;
    }
    out_ << "\n";
  }
  std::ostream& out_;
  std::vector<std::string> names_;
  std::vector<size_t> width_;
  std::vector<store::QueryRow> buffered_;
  bool header_printed_ = false;
};

}  // namespace

int run_sql_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> positionals;
  std::string format = "table";
  double timeout_s = 60;
  common::ArgParser parser(
      "fleetscope sql [--format table|json|csv] [--timeout SECONDS] DB \"SELECT ...\"",
      "Run one read-only SQL statement on a trace database; rows are printed as they come. "
      "Table and column names follow the Nsight Systems SQLite export (see docs/schema.md). "
      "The file is opened read-only and untrusted: an older schema is read through a migrated "
      "copy (kept in the user's cache, made once per content), never changed in the file "
      "(`fleetscope migrate` upgrades the file).");
  parser.option("--format", "FORMAT", "table (default), json or csv", &format)
      .option("--timeout", "SECONDS", "stop the query after SECONDS (default 60, 0 = no limit)",
              &timeout_s)
      .positionals("DB QUERY", "database file and the query", &positionals, 2, 2);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json" && format != "csv") {
    err << "error: --format must be table, json or csv, got '" << format << "'\n";
    return 2;
  }
  if (!(timeout_s >= 0) || timeout_s > 1e9) {
    err << "error: --timeout must be a number of seconds >= 0, got " << timeout_s << "\n";
    return 2;
  }
  try {
    // `sql` inspects a file as it is (a view where a table should be, a trigger): the shape check
    // of other readers is off for its open; its query has its own time limit.
    store::set_shape_checks(false);
    struct ShapeChecksBack {
      ~ShapeChecksBack() { store::set_shape_checks(true); }
    } shape_checks_back;
    store::Database db = store::Database::open(positionals[0], store::OpenMode::read_only);
    store::QueryLimits limits;
    limits.time_limit_s = timeout_s;
    std::vector<std::string> columns;
    TablePrinter table(out);
    int64_t rows = 0;
    auto on_columns = [&](const std::vector<std::string>& names) {
      columns = names;
      if (format == "csv") {
        for (size_t c = 0; c < names.size(); ++c)
          out << (c ? "," : "") << common::csv_field(names[c]);
        out << "\n";
      } else if (format == "json") {
        out << "[";
      } else {
        table.columns(names);
      }
    };
    auto on_row = [&](const store::QueryRow& row) {
      if (format == "csv") {
        for (size_t c = 0; c < row.size(); ++c)
          out << (c ? "," : "") << common::csv_field(row[c].value_or(""));
        out << "\n";
      } else if (format == "json") {
        nlohmann::json r = nlohmann::json::object();
        for (size_t c = 0; c < row.size(); ++c)
          r[columns[c]] = row[c] ? nlohmann::json(*row[c]) : nlohmann::json(nullptr);
        std::string text = r.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
        out << (rows ? ",\n  " : "\n  ");
        for (char ch : text) {
          out << ch;
          if (ch == '\n') out << "  ";
        }
      } else {
        table.row(row);
      }
      ++rows;
    };
    try {
      store::stream_query(db, positionals[1], limits, on_columns, on_row);
    } catch (const Error&) {
      // What was printed stays printed (rows are streamed); end the document cleanly.
      if (format == "json" && !columns.empty()) out << (rows ? "\n]" : "]") << "\n";
      throw;
    }
    if (format == "json") out << (rows ? "\n]" : "]") << "\n";
    if (format == "table") {
      table.flush();
      err << rows << " row(s)\n";
    }
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int run_migrate_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  std::vector<std::string> files;
  common::ArgParser parser("fleetscope migrate DB...",
                           "Upgrade trace databases written by older fleetscope builds to this "
                           "build's schema, in place (one transaction per file). Reading "
                           "commands never change a file; they read a migrated copy kept "
                           "in the user's cache (docs/gui.md, 'Older files').");
  parser.positionals("DB", "trace database(s) to upgrade", &files, 1);
  if (auto code = parser.parse(args, out, err)) return *code;
  for (const std::string& file : files) {
    try {
      // The file's own schema_version (a read-only open would report its migrated copy's).
      const int before = store::Database::open_external(file).schema_version();
      store::Database db = store::Database::open(file, store::OpenMode::read_write);
      const int after = db.schema_version();
      if (before == after)
        out << file << ": schema_version " << after << ", already current\n";
      else
        out << file << ": schema_version " << before << " -> " << after << "\n";
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace fleetscope::cli
