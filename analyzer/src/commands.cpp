#include "fleetscope/analyzer/commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "fleetscope/analyzer/allocator_tuning.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/analysis_cache.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/consolidation.h"
#include "fleetscope/analyzer/declared_memory.h"
#include "fleetscope/analyzer/device_metrics.h"
#include "fleetscope/analyzer/diff.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/analyzer/multi_rank.h"
#include "fleetscope/analyzer/report.h"
#include "fleetscope/analyzer/report_document.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/analyzer/threshold_config.h"
#include "fleetscope/common/args.h"
#include "fleetscope/common/capture_choice.h"
#include "fleetscope/common/csv.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/new_file.h"
#include "fleetscope/common/progress_line.h"
#include "fleetscope/common/text_table.h"
#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {

namespace {

using nlohmann::json;

struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Runs `body`, mapping errors to exit codes with one `error: ...` line.
int guarded(std::ostream& err, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

// Writes to `path` atomically (temporary file, rename), or to `out` when path is empty. Without
// `replace` (no --force), a file that appeared at `path` meanwhile is not replaced.
void emit(const std::string& path, std::ostream& out, const std::function<void(std::ostream&)>& fn,
          bool replace) {
  if (path.empty()) {
    fn(out);
    return;
  }
  store::AtomicOutput output(
      path, replace ? store::AtomicOutput::Replace::yes : store::AtomicOutput::Replace::no);
  {
    std::ostringstream text;
    fn(text);
    // A new file, never through a link planted under the temporary name (common/new_file.h).
    const int fd = common::create_new_file(output.temp_path());
    if (fd < 0) throw InputError(path, "", std::string("cannot create: ") + std::strerror(errno));
    const bool written = common::write_all(fd, text.str());
    const int error = errno;
    ::close(fd);
    if (!written) throw InputError(path, "", std::string("write failed: ") + std::strerror(error));
  }
  output.commit();
}

ReportFormat parse_format(const std::string& text) {
  auto format = report_format_from_string(text);
  if (!format)
    throw UsageError("--format must be table, markdown, json or chrome-trace, got '" + text + "'");
  return *format;
}

ThresholdOverrides parse_overrides(const std::vector<std::string>& items) {
  ThresholdOverrides out;
  for (const std::string& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || item.find('.') > eq)
      throw UsageError("--set expects RULE.THRESHOLD=VALUE, got '" + item + "'");
    char* end = nullptr;
    const std::string value = item.substr(eq + 1);
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0')
      throw UsageError("--set value is not a number: '" + item + "'");
    out[item.substr(0, eq)] = v;
  }
  return out;
}

std::string pct(double fraction) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << fraction * 100.0 << " %";
  return s.str();
}

// HTA's three analyses as HTA computes them (including its last-step filter), for the header.
std::vector<std::string> summary_lines(const CaptureData& data) {
  std::vector<std::string> lines;
  if (HtaStepFilter::for_capture(data).active)
    lines.push_back(
        "HTA view: GPU work launched in the last ProfilerStep is left out, as HTA does");
  auto idle = idle_time_breakdown(data);
  for (const auto& t : temporal_breakdown(data)) {
    int64_t host = 0, kernel = 0, other = 0;
    for (const auto& s : idle)
      if (s.device == t.device)
        host += s.host_wait_ns, kernel += s.kernel_wait_ns, other += s.other_ns;
    lines.push_back("GPU " + std::to_string(t.device) + ": span " + format_duration(t.span_ns) +
                    ", idle " + pct(t.idle_fraction()) + ", compute " + pct(t.compute_fraction()) +
                    ", non-compute " + pct(t.non_compute_fraction()) +
                    " (HTA temporal breakdown); idle summed over streams: host wait " +
                    format_duration(host) + ", kernel wait " + format_duration(kernel) +
                    ", other " + format_duration(other));
  }
  std::map<int32_t, GpuUtilization> utilization;
  for (const GpuUtilization& u : gpu_utilization(data)) utilization[u.device] = u;
  for (const auto& m : device_metrics(data)) {
    std::string line = "GPU " + std::to_string(m.device) + ": ";
    if (auto u = utilization.find(m.device); u != utilization.end())
      line += "GPU utilization " + pct(u->second.utilization()) + " (" +
              format_duration(u->second.busy_ns) + " busy in the " +
              (u->second.window_is_steps ? "steps' span " : "span ") +
              format_duration(u->second.window.length()) + "); ";
    line += "busy " + format_duration(m.busy_all_ns) + " (kernels " +
            format_duration(m.busy_kernels_ns) + ") of the first-to-last span " +
            format_duration(m.span_ns);
    if (m.kernel_utilization_steps)
      line += ", kernel utilization in steps (profiler plugin) " + pct(*m.kernel_utilization_steps);
    if (m.est_sm_efficiency) line += ", est. SM efficiency " + pct(*m.est_sm_efficiency);
    if (m.est_achieved_occupancy)
      line += ", est. achieved occupancy " + pct(*m.est_achieved_occupancy / 100.0);
    if (auto overlap = m.comm_comp_overlap.ratio())
      line += ", communication overlapped by compute " + pct(*overlap);
    lines.push_back(line);
  }
  auto launches = launch_statistics(data);
  if (!launches.launches.empty())
    lines.push_back("launches: " + std::to_string(launches.launches.size()) + ", short kernels " +
                    std::to_string(launches.short_kernels) + ", launch delay p50 " +
                    format_duration(launches.launch_delay_p50_ns) + " / p95 " +
                    format_duration(launches.launch_delay_p95_ns));
  auto steps = step_stats(data);
  if (steps.count)
    lines.push_back("steps: " + std::to_string(steps.count) + ", median " +
                    format_duration(steps.median_ns) + ", p90 " + format_duration(steps.p90_ns) +
                    ", p99 " + format_duration(steps.p99_ns) + ", jitter " + pct(steps.jitter));
  if (data.gpu.size() == 0) lines.push_back("no GPU activity in this capture");
  return lines;
}

// True when `path` is a trace file (Kineto JSON, gzip JSON) rather than a trace database. Only
// the first bytes are read; an unreadable path is left for the database open to report.
bool is_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  if (!in.read(head, sizeof head) && in.gcount() == 0) return false;
  if (std::string(head, static_cast<size_t>(in.gcount())).rfind("SQLite format 3", 0) == 0)
    return false;
  const auto first = static_cast<unsigned char>(head[0]);
  if (first == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) return true;  // gzip
  for (std::streamsize i = 0; i < in.gcount(); ++i) {
    const char c = head[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// A diff metric for people: "_ns" metrics as durations, fractions as percentages, counts as
// integers (the JSON keeps the raw numbers).
std::string diff_value_text(const std::string& metric, double value) {
  auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return metric.size() >= s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("_ns")) return format_duration(static_cast<int64_t>(value));
  if (ends_with("utilization") || ends_with("_fraction") || ends_with("_share")) return pct(value);
  std::ostringstream s;
  if (value == static_cast<double>(static_cast<int64_t>(value)))
    s << static_cast<int64_t>(value);
  else
    s << std::setprecision(6) << value;
  return s.str();
}

void list_rules(std::ostream& out) {
  for (const auto& rule : RuleRegistry::builtin().rules()) {
    out << rule->id() << "  " << rule->title() << "\n";
    for (const auto& t : rule->thresholds())
      out << "    " << rule->id() << "." << t.name << " = " << t.value << "  (" << t.source
          << ")\n";
  }
}

// `analyze` on several trace files, or a directory of them: the ranks of one distributed job
// (multi_rank.h). Each file is imported in memory; its rank is Kineto's distributedInfo.rank.
int analyze_ranks_command(const std::vector<std::string>& inputs, const std::string& format,
                          const std::string& output, bool force, std::ostream& out,
                          std::ostream& err) {
  if (format != "table" && format != "json")
    throw UsageError("--format must be table or json for several ranks, got '" + format + "'");
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    if (!std::filesystem::is_directory(input)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(input)) {
      const std::string name = entry.path().filename().string();
      const auto ends = [&](const std::string& suffix) {
        return name.size() >= suffix.size() &&
               name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (entry.is_regular_file() && (ends(".json") || ends(".json.gz")))
        found.push_back(entry.path().string());
    }
    if (found.empty()) throw InputError(input, "", "no Kineto trace (*.json, *.json.gz) in it");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  std::vector<CaptureData> captures;
  captures.reserve(files.size());
  std::vector<RankInput> ranks;
  for (const std::string& file : files) {
    if (!is_trace_file(file))
      throw InputError(file, "",
                       "several inputs are the ranks of one job: Kineto trace files "
                       "(JSON or .json.gz), not a database");
    err << "analyze: importing " << file << " in memory\n";
    captures.push_back(load_trace_file(file));
    const auto rank = capture_rank(captures.back());
    if (!rank)
      throw InputError(file, "distributedInfo.rank",
                       "no rank recorded (Kineto writes it for torch.distributed jobs)");
    for (const RankInput& r : ranks)
      if (r.rank == *rank)
        throw InputError(file, "distributedInfo.rank",
                         "rank " + std::to_string(*rank) + " again (also in " + r.source + ")");
    ranks.push_back({*rank, std::filesystem::path(file).filename().string(), nullptr});
  }
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i].data = &captures[i];
  std::sort(ranks.begin(), ranks.end(),
            [](const RankInput& a, const RankInput& b) { return a.rank < b.rank; });
  const MultiRankResult result = analyze_ranks(ranks);
  err << "analyze: " << ranks.size() << " ranks, " << (result.finding ? 1 : 0) << " finding(s)\n";
  emit(
      output, out,
      [&](std::ostream& os) {
        if (format == "json") {
          os << multi_rank_json(result).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
          return;
        }
        for (const std::string& line : multi_rank_lines(result)) os << line << "\n";
      },
      force);
  return 0;
}

}  // namespace

// What analyze and report read: a fleetscope database as it is, a Kineto trace or an nsys export
// through the importers (importers/open_input.h), and the captures `--capture` selects.
struct ReadingInput {
  importers::InputKind kind = importers::InputKind::fleetscope_database;
  std::optional<importers::OpenedInput> opened;  // databases and nsys exports
  std::optional<CaptureData> trace;              // a Kineto trace, imported straight to memory
  std::vector<int64_t> captures;
};

ReadingInput open_reading_input(const std::string& input, const common::CaptureChoice& choice,
                                bool default_all, const char* command, const LoadProgress& progress,
                                const ImportProgressFn& import_progress, std::ostream& err) {
  ReadingInput in;
  in.kind = importers::input_kind(input);
  if (in.kind == importers::InputKind::kineto_json) {
    // A Kineto trace is one capture, imported straight into memory (analyzer::load_trace_file:
    // no database) and dropped afterwards.
    err << command << ": importing " << input
        << " in memory (use `fleetscope import` to keep it)\n";
    in.trace = load_trace_file(input, progress, import_progress);
    if (choice.id && *choice.id != in.trace->capture.id)
      throw InputError(input, "",
                       "no capture with id " + std::to_string(*choice.id) +
                           " (a trace file is one capture, id " +
                           std::to_string(in.trace->capture.id) + ")");
    in.captures = {in.trace->capture.id};
    return in;
  }
  if (in.kind == importers::InputKind::nsys_sqlite)
    err << command << ": importing the nsys SQLite export " << input
        << " in memory (use `fleetscope import` to keep it)\n";
  importers::ImportOptions options;
  options.progress = [&](const importers::ImportProgress& p) {
    if (import_progress) import_progress(p.bytes_done, p.bytes_total, p.events);
  };
  in.opened = importers::open_input(input, options);
  in.captures = select_captures(in.opened->reader(), choice, default_all, input);
  return in;
}

namespace {

// What `analyze` and `report` print with the findings of a capture in the table, markdown and
// json formats: one header for both, so `report --format json` is `analyze --format json
// --no-store` (it printed "metrics": null and no summary lines).
ReportHeader findings_header(const CaptureData& data, const AnalysisResult& result, int64_t id,
                             ReportFormat fmt, bool series) {
  ReportHeader header;
  header.capture_id = id;
  header.rules = result.rules;
  header.findings_source = result.source;
  header.source = data.capture.source_path;
  header.summary_lines = summary_lines(data);
  MetricsJsonOptions json_options;
  json_options.series = series;
  if (fmt == ReportFormat::json) header.metrics = metrics_json(data, json_options);
  return header;
}

}  // namespace

int run_analyze_command(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
  keep_freed_memory_for_reuse();  // one-shot analysis: see allocator_tuning.h
  std::vector<std::string> positionals, rules, sets;
  std::string capture_text;
  std::string format = "table", output, config;
  bool no_store = false, show_rules = false, series = false, force = false;
  common::ArgParser parser(
      "fleetscope analyze DB|TRACE|NSYS.sqlite|RANK_TRACES...|DIR [--capture ID|all] "
      "[--rules LIST] [--config FILE] [--set RULE.THRESHOLD=VALUE] "
      "[--format table|markdown|json|chrome-trace] [--series] [-o FILE [--force]] [--no-store]",
      "Runs the antipattern rules on a capture, stores the findings in the database's "
      "findings table (replacing earlier ones for that capture) and prints them. A Kineto trace "
      "(JSON or .json.gz) or an Nsight Systems SQLite export (`nsys export --type sqlite`) is "
      "imported in memory and analysed without writing anything. A database with several "
      "captures needs --capture ID, or --capture all (each in turn).");
  parser
      .positionals("DB|TRACE...",
                   "trace database (fleetscope import / run / daemon), a Kineto trace file or an "
                   "nsys SQLite export; several trace files or a directory of them: the ranks "
                   "of one job",
                   &positionals, 0)
      .option("--capture", "ID|all",
              "capture to analyse (default: the only one); all: every capture in turn",
              &capture_text)
      .list("--rules", "LIST", "comma-separated rule ids (default: all; see --list-rules)", &rules)
      .option("--config", "FILE",
              "threshold overrides, one 'RULE.THRESHOLD = VALUE' per line ([RULE] sections "
              "allowed, # comments)",
              &config)
      .list("--set", "RULE.THRESHOLD=VALUE",
            "override a threshold (repeatable; wins over --config)", &sets)
      .option("--format", "FORMAT", "table (default), markdown, json or chrome-trace", &format)
      .option("-o, --output", "FILE", "write the report to FILE instead of stdout", &output)
      .flag("--force", "replace FILE if it exists (as `import --force`)", &force)
      .flag("--series",
            "json: add the time series (queue length per stream, memory bandwidth per copy kind)",
            &series)
      .flag("--no-store", "do not write findings into the database", &no_store)
      .flag("--list-rules", "list the rules and their thresholds, then exit", &show_rules);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (show_rules) {
    list_rules(out);
    return 0;
  }
  if (positionals.empty()) {
    err << "error: missing DB\nusage: fleetscope analyze DB ... (see --help)\n";
    return 2;
  }
  if (!output.empty())
    if (auto refusal = common::output_refusal(output, positionals, force)) {
      err << "error: " << *refusal << "\n";
      return 1;
    }
  if (positionals.size() > 1 || std::filesystem::is_directory(positionals[0]))
    return guarded(
        err, [&] { return analyze_ranks_command(positionals, format, output, force, out, err); });
  return guarded(err, [&] {
    const common::CaptureChoice choice = common::parse_capture_choice(capture_text);
    const ReportFormat fmt = parse_format(format);
    AnalyzeOptions options;
    options.rules = rules;
    if (!config.empty()) options.thresholds = read_threshold_config(config);
    for (const auto& [key, value] : parse_overrides(sets)) options.thresholds[key] = value;
    const std::string& input = positionals[0];
    // Progress on a terminal only (common/progress_line.h): rows loaded, or bytes imported.
    common::ProgressLine line(err, "analyze", isatty(STDERR_FILENO) == 1);
    const LoadProgress progress = [&](const std::string& stage, int64_t rows) {
      if (stage == "indexed") return line.finish();
      line.update(rows, 0, (stage + " rows").c_str(), 0, true);
    };
    const ImportProgressFn import_progress = [&](int64_t done, int64_t total, int64_t events) {
      line.update(done, total, "bytes", events);
    };
    ReadingInput in =
        open_reading_input(input, choice, false, "analyze", progress, import_progress, err);
    line.finish();
    if (fmt == ReportFormat::chrome_trace && in.captures.size() > 1)
      throw UsageError("chrome-trace holds one capture: choose it with --capture ID");
    struct Analysed {
      AnalysisResult result;
      ReportHeader header;
    };
    std::vector<Analysed> analysed;
    // The one rule for stored vs fresh findings (capture_findings(), analysis.h): the rows are
    // analysed now; stored findings stand in only for a capture with no rows left.
    auto analyse_data = [&](const CaptureData& data, int64_t id, const store::Reader* reader) {
      Analysed a;
      a.result = capture_findings(data, reader, options);
      a.header = findings_header(data, a.result, id, fmt, series);
      err << "analyze: capture " << id << " of " << input << ": " << a.result.findings.size()
          << " finding(s), " << a.result.not_evaluated().size() << " rule(s) not evaluated\n";
      analysed.push_back(std::move(a));
    };
    if (in.trace) {
      analyse_data(*in.trace, in.trace->capture.id, nullptr);
    } else {
      const store::Reader reader = in.opened->reader();
      // Only the tables the selected rules and the summary read; the JSON metrics document
      // reads every part.
      const CaptureParts parts =
          fmt == ReportFormat::json ? CaptureParts::all() : parts_needed(options);
      for (int64_t id : in.captures)
        analyse_data(load_capture(reader, id, progress, parts), id, &reader);
    }
    // A database this user may read but not update (another user's file, a read-only mount) is
    // analysed all the same: the findings are printed and only storing them is left out, with a
    // note that says why (SQLite writes its journal beside the file, so the folder counts too).
    std::optional<std::string> cannot_store;
    if (!no_store && in.kind == importers::InputKind::fleetscope_database) {
      if (::access(input.c_str(), W_OK) != 0)
        cannot_store = std::strerror(errno);
      else
        cannot_store = common::output_problem(input);
      if (cannot_store)
        err << "analyze: findings not stored: " << common::cannot_write(input, *cannot_store)
            << " (--no-store skips storing)\n";
    }
    if (!no_store && !cannot_store && in.kind == importers::InputKind::fleetscope_database) {
      store::Database db = store::Database::open(input, store::OpenMode::read_write);
      // A file in WAL mode is a live host database (fleetscoped holds it) or one that was being
      // written: the findings go in as short transactions beside the other writer, and finish()
      // leaves the journal mode as it is and builds nothing (the file's indexes are its writer's
      // business), so analyzing never locks out the daemon nor is locked out by it.
      store::WriterOptions writer_options;
      {
        auto mode = db.prepare("PRAGMA journal_mode");
        writer_options.keep_wal_after_finish = mode.step() && mode.column_text(0) == "wal";
      }
      writer_options.build_indexes = !writer_options.keep_wal_after_finish;
      store::Writer writer(std::move(db), writer_options);
      // Stored findings shown again are left as they are (nothing was analysed), and so is an
      // analysis read back from the cache (it is in the file already, under its key). The
      // others are filed under their key (analysis_cache.h), for `fleet` and the daemon's
      // readers to reuse while the rows, rules, thresholds and analyzer build stay the same.
      for (Analysed& a : analysed)
        if (a.result.source == FindingsSource::analysed && !a.result.from_cache)
          store_analysis(writer, a.header.capture_id, a.result);
      writer.finish();
    }
    emit(
        output, out,
        [&](std::ostream& os) {
          if (fmt == ReportFormat::json && analysed.size() > 1) {
            // Several captures: a JSON array of the one-capture documents.
            json list = json::array();
            for (const Analysed& a : analysed) {
              std::ostringstream one;
              render_findings(a.result.findings, fmt, a.header, one);
              list.push_back(json::parse(one.str()));
            }
            os << list.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
            return;
          }
          for (size_t i = 0; i < analysed.size(); ++i) {
            if (i) os << "\n";
            render_findings(analysed[i].result.findings, fmt, analysed[i].header, os);
          }
        },
        force);
    return 0;
  });
}

int run_report_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  keep_freed_memory_for_reuse();  // one-shot analysis: see allocator_tuning.h
  std::vector<std::string> positionals, rules, sets;
  std::string capture_text;
  std::string format, output, config;
  bool force = false;
  common::ArgParser parser(
      "fleetscope report DB|TRACE|NSYS.sqlite [--capture ID|all] [-o FILE [--force]] "
      "[--format html|markdown|table|json|chrome-trace] [--rules LIST] [--config FILE] "
      "[--set RULE.THRESHOLD=VALUE]",
      "Analyses a capture now (as `fleetscope analyze --no-store` does, with the same rules and "
      "thresholds in every format) and writes its report. html and markdown: the full document "
      "(metrics per device, kernel utilization charts, iterations, launches, idle streams, "
      "memory, findings by impact, rules not evaluated); Markdown charts go to FILE_files/ next "
      "to FILE.md. table, json and chrome-trace: what `analyze --no-store` prints in that "
      "format (json: with every metric). Without --format the format "
      "follows the -o extension (.html/.htm, .md/.markdown), else table. A Kineto trace or an "
      "nsys SQLite export is imported in memory first.");
  parser
      .positionals("DB", "trace database, Kineto trace file or nsys SQLite export", &positionals, 1,
                   1)
      .option("--capture", "ID|all",
              "capture (default: the only one); all: each in turn (table and json)", &capture_text)
      .option("-o, --output", "FILE", "write the report to FILE instead of stdout", &output)
      .flag("--force", "replace FILE (and its Markdown charts) if it exists (as `import --force`)",
            &force)
      .option("--format", "FORMAT",
              "html, markdown, table, json or chrome-trace (default: from the -o extension, "
              "else table)",
              &format)
      .list("--rules", "LIST", "comma-separated rule ids (default: all)", &rules)
      .option("--config", "FILE", "threshold overrides file (as for analyze)", &config)
      .list("--set", "RULE.THRESHOLD=VALUE", "override a threshold (repeatable)", &sets);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (!output.empty())
    if (auto refusal = common::output_refusal(output, positionals, force)) {
      err << "error: " << *refusal << "\n";
      return 1;
    }
  return guarded(err, [&] {
    const common::CaptureChoice choice = common::parse_capture_choice(capture_text);
    std::string name = format;
    if (name.empty() && !output.empty()) {
      std::string ext = std::filesystem::path(output).extension().string();
      for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (ext == ".html" || ext == ".htm")
        name = "html";
      else if (ext == ".md" || ext == ".markdown")
        name = "markdown";
      else
        throw UsageError("cannot tell the report format from '" + output +
                         "' (use .html, .htm or .md, or give --format)");
    }
    if (name.empty()) name = "table";
    const std::optional<DocumentFormat> document = document_format_from_string(name);
    if (!document && !report_format_from_string(name))
      throw UsageError("--format must be html, markdown, table, json or chrome-trace, got '" +
                       name + "'");
    if (choice.all && (document || name == "chrome-trace"))
      throw UsageError(name +
                       " holds one capture: choose it with --capture ID (table and json take "
                       "--capture all)");
    if (!output.empty()) {  // fail before a long analysis (the writers check again)
      if (auto problem = common::output_problem(output))
        throw Error(common::cannot_write(output, *problem));
    }
    AnalyzeOptions options;
    options.rules = rules;
    if (!config.empty()) options.thresholds = read_threshold_config(config);
    for (const auto& [key, value] : parse_overrides(sets)) options.thresholds[key] = value;
    const std::string& input = positionals[0];
    err << "report: loading " << input << "\n";
    const LoadProgress progress = [&](const std::string& stage, int64_t rows) {
      err << "report: " << stage << ": " << rows << " rows\n";
    };
    ReadingInput in = open_reading_input(input, choice, false, "report", progress, {}, err);
    // Every format follows the one rule for stored vs fresh findings (capture_findings(),
    // analysis.h): the analysis made now, so the report never changes meaning with its format
    // nor differs from `analyze` (findings stored with other thresholds are not mixed in).
    auto analysed = [&](int64_t id,
                        const std::function<void(const CaptureData&, const AnalysisResult&)>& use) {
      std::optional<store::Reader> reader;
      if (!in.trace) reader.emplace(in.opened->reader());
      const CaptureData data =
          in.trace ? std::move(*in.trace) : load_capture(*reader, id, progress);
      err << "report: analysing capture " << id << " of " << input << "\n";
      const AnalysisResult result = capture_findings(data, reader ? &*reader : nullptr, options);
      err << "report: " << result.findings.size() << " finding(s), "
          << result.not_evaluated().size() << " rule(s) not evaluated\n";
      use(data, result);
    };

    if (!document) {
      const ReportFormat fmt = parse_format(name);
      std::vector<std::pair<std::vector<store::Finding>, ReportHeader>> reports;
      for (int64_t id : in.captures)
        analysed(id, [&](const CaptureData& data, const AnalysisResult& result) {
          reports.emplace_back(result.findings, findings_header(data, result, id, fmt, false));
        });
      emit(
          output, out,
          [&](std::ostream& os) {
            if (fmt == ReportFormat::json && reports.size() > 1) {
              json list = json::array();
              for (const auto& [findings, header] : reports) {
                std::ostringstream one;
                render_findings(findings, fmt, header, one);
                list.push_back(json::parse(one.str()));
              }
              os << list.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
              return;
            }
            for (size_t i = 0; i < reports.size(); ++i) {
              if (i) os << "\n";
              render_findings(reports[i].first, fmt, reports[i].second, os);
            }
          },
          force);
      return 0;
    }

    // The full document of one capture.
    ReportDocumentOptions doc_options;
    doc_options.format = *document;
    if (*document == DocumentFormat::markdown) {
      if (output.empty())
        err << "report: Markdown on stdout: charts omitted (they are written as SVG files next "
               "to the report with -o FILE.md)\n";
      else
        doc_options.chart_dir = chart_dir_for(output);
    }
    analysed(in.captures.front(), [&](const CaptureData& data, const AnalysisResult& result) {
      const ReportDocument doc = render_report_document(data, result, doc_options);
      if (output.empty()) {
        out << doc.text;
        return;
      }
      err << "report: writing " << output;
      if (!doc.charts.empty())
        err << " and " << doc.charts.size() << " chart(s) in "
            << (std::filesystem::path(output).parent_path() / doc_options.chart_dir).string();
      err << "\n";
      write_report_document(output, doc, force);
    });
    return 0;
  });
}

void write_fleet_ranking(const std::vector<WorkflowWaste>& ranking, const std::string& format,
                         std::ostream& out, const std::string& name_column,
                         const std::vector<CaptureWithoutGpu>& without_gpu) {
  if (format == "json") {
    json list = json::array();
    for (const auto& w : ranking)
      list.push_back({{name_column, w.workflow},
                      {"user", w.user},
                      {"captures", w.captures},
                      {"devices", w.devices},
                      {"gpu_activity", true},
                      {"gpu_hours", w.gpu_hours()},
                      {"wasted_gpu_hours", w.wasted_gpu_hours()},
                      {"utilization", w.utilization()},
                      {"idle_ns", w.idle_ns},
                      {"span_ns", w.span_ns},
                      {"findings_impact_ns", w.findings_impact_ns},
                      {"top_rule", w.top_rule},
                      {"steps", w.steps.count},
                      {"step_p50_ns", w.steps.median_ns},
                      {"step_p90_ns", w.steps.p90_ns},
                      {"step_p99_ns", w.steps.p99_ns},
                      {"step_jitter", w.steps.jitter}});
    // Not ranked: no GPU time held, so no utilization and no step tail to rank by; the capture
    // is named by its input and id.
    for (const auto& c : without_gpu)
      list.push_back({{name_column, c.workflow},
                      {"user", c.user},
                      {"captures", 1},
                      {"devices", 0},
                      {"gpu_activity", false},
                      {"gpu_hours", 0.0},
                      {"wasted_gpu_hours", 0.0},
                      {"utilization", nullptr},
                      {"idle_ns", 0},
                      {"span_ns", 0},
                      {"findings_impact_ns", 0},
                      {"top_rule", ""},
                      {"source", c.source},
                      {"capture", c.capture}});
    out << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (format == "csv") {
    // The step columns come before the findings so that top_rule stays the last column.
    out << name_column
        << ",user,captures,devices,gpu_activity,gpu_hours,wasted_gpu_hours,utilization,steps,"
           "step_p50_ns,step_p90_ns,step_p99_ns,step_jitter,findings_impact_ns,top_rule\n";
    for (const auto& w : ranking)
      out << common::csv_field(w.workflow) << "," << common::csv_field(w.user) << "," << w.captures
          << "," << w.devices << ",true," << w.gpu_hours() << "," << w.wasted_gpu_hours() << ","
          << w.utilization() << "," << w.steps.count << "," << w.steps.median_ns << ","
          << w.steps.p90_ns << "," << w.steps.p99_ns << "," << w.steps.jitter << ","
          << w.findings_impact_ns << "," << common::csv_field(w.top_rule) << "\n";
    // Not ranked (gpu_activity false): utilization and the step columns are empty.
    for (const auto& c : without_gpu)
      out << common::csv_field(c.workflow) << "," << common::csv_field(c.user)
          << ",1,0,false,0,0,,,,,,,0,\n";
  } else {
    int name_width = 32;
    // Workflow names and stored rule ids come from the files: escaped for the terminal.
    for (const auto& w : ranking)
      name_width =
          std::max(name_width, static_cast<int>(text::terminal_safe(w.workflow).size()) + 2);
    for (const auto& c : without_gpu)
      name_width =
          std::max(name_width, static_cast<int>(text::terminal_safe(c.workflow).size()) + 2);
    std::string title = name_column;
    for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out << std::left << std::setw(name_width) << title << std::setw(14) << "WASTED GPU-H"
        << std::setw(12) << "GPU-H" << std::setw(8) << "UTIL" << std::setw(10) << "CAPTURES"
        << std::setw(24) << "STEP P50/P99"
        << "TOP FINDING\n";
    for (const auto& w : ranking) {
      std::ostringstream wasted, held;
      wasted << std::fixed << std::setprecision(6) << w.wasted_gpu_hours();
      held << std::fixed << std::setprecision(6) << w.gpu_hours();
      // The tail next to the median: a job whose p99 step is far above p50 wastes time too.
      const std::string tail = w.steps.count ? format_duration(w.steps.median_ns) + " / " +
                                                   format_duration(w.steps.p99_ns)
                                             : std::string("-");
      out << std::left << std::setw(name_width) << text::terminal_safe(w.workflow) << std::setw(14)
          << wasted.str() << std::setw(12) << held.str() << std::setw(8) << pct(w.utilization())
          << std::setw(10) << w.captures << std::setw(24) << tail
          << (w.top_rule.empty() ? "-" : text::terminal_safe(w.top_rule)) << "\n";
    }
    if (!without_gpu.empty()) {
      out << "\nNO GPU ACTIVITY (not ranked: 0 GPU-hours)\n";
      for (const auto& c : without_gpu)
        out << std::left << std::setw(name_width) << text::terminal_safe(c.workflow)
            << text::terminal_safe(c.source) << " capture " << c.capture << "\n";
    }
  }
}

int run_fleet_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  keep_freed_memory_for_reuse();  // one-shot analysis: see allocator_tuning.h
  std::vector<std::string> positionals;
  std::string format = "table", capture_text;
  int64_t top = 20;
  common::ArgParser parser(
      "fleetscope fleet DB... [--capture ID|all] [--format table|json|csv] [--top N]\n"
      "       fleetscope fleet --prometheus URL [--range DURATION] [--format table|json|csv] "
      "[--top N]",
      "Ranks jobs across trace databases (or Kineto traces and nsys SQLite exports) by wasted "
      "GPU-hours: GPU idle time inside the window of each job's GPU utilization, per GPU (its "
      "steps' span, else its first-to-last GPU-event span). With --prometheus URL, across every "
      "host a "
      "Prometheus server scrapes (each host's fleetscoped: GPU-seconds held minus busy, its "
      "captures and top finding); --range DURATION (PromQL, e.g. 1d) limits it to the last "
      "DURATION (see `fleetscope fleet --prometheus URL --help`).");
  parser
      .positionals("DB...",
                   "trace databases (one per host or capture), Kineto traces or nsys "
                   "SQLite exports",
                   &positionals, 1)
      .option("--capture", "ID|all", "only the capture with this id in each input (default: all)",
              &capture_text)
      .option("--format", "FORMAT", "table (default), json or csv", &format)
      .option("--top", "N", "show the N most wasteful jobs (0 = all; default 20)", &top, 0);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json" && format != "csv") {
    err << "error: --format must be table, json or csv\n";
    return 2;
  }
  // One file named twice (the same path again, a link to it) is one database, ranked once:
  // `fleet all.db all.db` doubled each job's GPU-hours and waste while its captures said 1.
  // Copies are other files and count (the analysis session opens a file once alike).
  {
    std::set<std::pair<dev_t, ino_t>> seen;
    std::vector<std::string> distinct;
    for (const std::string& path : positionals) {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && !seen.insert({st.st_dev, st.st_ino}).second) {
        err << "fleet: " << path << ": the same file as an earlier input; counted once\n";
        continue;
      }
      distinct.push_back(path);  // unreadable ones too: opening names the problem
    }
    positionals = std::move(distinct);
  }

  return guarded(err, [&] {
    const common::CaptureChoice choice = common::parse_capture_choice(capture_text);
    common::ProgressLine line(err, "fleet", isatty(STDERR_FILENO) == 1);
    std::vector<CaptureWithoutGpu> without_gpu;
    auto ranking = rank_workflows(
        positionals,
        [&](const std::string&, size_t i, size_t n) {
          line.update(static_cast<int64_t>(i + 1), static_cast<int64_t>(n), "databases", 0, true);
        },
        choice, &without_gpu);
    line.finish();
    // A job is ranked by its GPU work: captures without any (CPU-only ranks, a trace of another
    // part of the job) hold no GPU time. Each is named here and listed after the ranking (not
    // cut by --top), never dropped without a word.
    for (const auto& c : without_gpu)
      err << "fleet: " << c.source << ": capture " << c.capture << " (" << c.workflow
          << "): no GPU activity (kernels, copies, memsets): listed with 0 GPU-hours, not "
             "ranked\n";
    if (ranking.empty())
      err << "fleet: no GPU activity (kernels, copies, memsets) in any capture of the "
          << positionals.size() << " input(s): nothing to rank\n";
    if (top > 0 && ranking.size() > static_cast<size_t>(top))
      ranking.resize(static_cast<size_t>(top));
    write_fleet_ranking(ranking, format, out, "workflow", without_gpu);
    return 0;
  });
}

int run_diff_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  keep_freed_memory_for_reuse();  // one-shot analysis: see allocator_tuning.h
  std::vector<std::string> positionals;
  std::string capture_text, before_text, after_text;
  std::string format = "table";
  common::ArgParser parser(
      "fleetscope diff BEFORE AFTER [--capture ID] [--before-capture ID] [--after-capture ID] "
      "[--format table|json]",
      "Compares the metrics of two captures (e.g. before and after a fix). Each input is a "
      "trace database, a Kineto trace or an nsys SQLite export. --capture picks the capture in "
      "both; with one database given twice, pick them with --before-capture / --after-capture.");
  parser
      .positionals("BEFORE AFTER", "trace databases, Kineto traces or nsys SQLite exports",
                   &positionals, 2, 2)
      .option("--capture", "ID", "capture in both inputs (default: the only one)", &capture_text)
      .option("--before-capture", "ID", "capture in BEFORE (wins over --capture)", &before_text)
      .option("--after-capture", "ID", "capture in AFTER (wins over --capture)", &after_text)
      .option("--format", "FORMAT", "table (default) or json", &format);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json") {
    err << "error: --format must be table or json\n";
    return 2;
  }
  return guarded(err, [&] {
    const common::CaptureChoice both = common::parse_capture_choice(capture_text);
    auto load = [&](const std::string& path, const std::string& own_text) {
      const common::CaptureChoice own = common::parse_capture_choice(own_text);
      const common::CaptureChoice choice = own.given() ? own : both;
      if (choice.all)
        throw UsageError("diff compares two captures: --capture takes an id here, not 'all'");
      const importers::OpenedInput input = importers::open_input(path);
      const store::Reader reader = input.reader();
      const int64_t id = select_captures(reader, choice, false, path).front();
      err << "diff: capture " << id << " of " << path << "\n";
      return load_capture(reader, id);
    };
    CaptureData before = load(positionals[0], before_text);
    CaptureData after = load(positionals[1], after_text);
    CaptureDiff d = diff_captures(before, after);
    if (format == "json") {
      json metrics = json::array(), kernels = json::array();
      for (const auto& m : d.metrics)
        metrics.push_back({{"metric", m.metric},
                           {"before", m.before},
                           {"after", m.after},
                           {"delta", m.delta()},
                           {"ratio", m.ratio()}});
      for (const auto& k : d.kernels)
        kernels.push_back({{"name", k.name},
                           {"count_before", k.count_before},
                           {"count_after", k.count_after},
                           {"total_ns_before", k.total_ns_before},
                           {"total_ns_after", k.total_ns_after}});
      out << json{{"metrics", metrics}, {"kernels", kernels}}.dump(
                 2, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
      return 0;
    }
    out << std::left << std::setw(24) << "METRIC" << std::setw(18) << "BEFORE" << std::setw(18)
        << "AFTER"
        << "RATIO\n";
    for (const auto& m : d.metrics) {
      std::ostringstream ratio;
      ratio << std::fixed << std::setprecision(3) << m.ratio();
      out << std::left << std::setw(24) << m.metric << std::setw(18)
          << diff_value_text(m.metric, m.before) << std::setw(18)
          << diff_value_text(m.metric, m.after) << (m.before != 0 ? ratio.str() : "-") << "\n";
    }
    out << "\nkernels with the largest change in total time:\n";
    for (const auto& k : d.kernels)
      out << "  " << format_duration(k.total_ns_before) << " -> "
          << format_duration(k.total_ns_after) << "  (" << k.count_before << " -> " << k.count_after
          << ")  " << text::terminal_safe(k.name.substr(0, 100)) << "\n";
    return 0;
  });
}

namespace {
// P and T are known when measured or declared (declared_memory.h); else the table says unknown.
bool memory_known(const ConsolidationCandidate& c) {
  return c.memory_measured || !c.memory_source.empty();
}
}  // namespace

int run_candidates_command(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
  keep_freed_memory_for_reuse();  // one-shot analysis: see allocator_tuning.h
  std::vector<std::string> positionals, memory_jobs;
  std::string format = "table", memory_from;
  double max_util = 0.5;
  bool wide = false;
  common::ArgParser parser(
      "fleetscope candidates DB [--capture ID|all] [--max-utilization F] [--memory-from "
      "SALUS_WORKLOADS.csv "
      "--memory-job CAPTURE=NAME...] [--format table|json|profiles]",
      "Lists jobs per GPU with utilization, persistent memory P and ephemeral peak T per "
      "iteration (Salus's lane inputs), marking those that could share a GPU. A capture without "
      "memory events can take its memory from a declared source: a row of Salus's workloads "
      "table (peak taken whole as P). --format profiles writes the JSON that `share plan "
      "--candidates` reads.");
  std::string capture_text;
  parser.positionals("DB", "trace database, Kineto trace or nsys SQLite export", &positionals, 1, 1)
      .option("--capture", "ID|all", "only this capture (default: all)", &capture_text)
      .option("--max-utilization", "F", "GPU utilization below which a job is a candidate (0.5)",
              &max_util)
      .option("--memory-from", "FILE",
              "Salus workloads table (name_bs_duration,jct_s,peak_mb,iterations,command)",
              &memory_from)
      .list("--memory-job", "CAPTURE=NAME",
            "the workload row whose memory a capture without memory events takes (repeatable)",
            &memory_jobs)
      .option("--format", "FORMAT", "table (default), json or profiles", &format)
      .flag("--wide", "print workflow names in full (the table cuts long ones in the middle)",
            &wide);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (format != "table" && format != "json" && format != "profiles") {
    err << "error: --format must be table, json or profiles\n";
    return 2;
  }
  if (memory_from.empty() != memory_jobs.empty()) {
    err << "error: --memory-from and --memory-job go together\n";
    return 2;
  }
  // A utilization is a fraction: nan made every job "keep" and 2 every job a candidate, both
  // with exit 0.
  if (!(max_util >= 0 && max_util <= 1)) {
    err << "error: --max-utilization expects a fraction from 0 to 1 (e.g. 0.5), got " << max_util
        << "\n";
    return 2;
  }
  std::map<int64_t, std::string> job_of_capture;
  for (const std::string& m : memory_jobs) {
    const auto eq = m.find('=');
    char* end = nullptr;
    const long long capture = eq == std::string::npos ? 0 : std::strtoll(m.c_str(), &end, 10);
    if (eq == std::string::npos || end != m.c_str() + eq || capture <= 0 || eq + 1 == m.size()) {
      err << "error: --memory-job expects CAPTURE=NAME (a capture id and a workload name), got '"
          << m.substr(0, 80) << "'\n";
      return 2;
    }
    job_of_capture[capture] = m.substr(eq + 1);
  }
  return guarded(err, [&] {
    const common::CaptureChoice choice = common::parse_capture_choice(capture_text);
    // The analysis session reads the candidates (P and T from the trace, else the daemon's NVML
    // figures) and maps them to the planner's job profiles, as `share plan DB` does.
    AnalysisSession session;
    const SessionSource& source = session.open(positionals[0]);
    const sharer::MemoryModel memory = sharer::host_memory_model().model;
    ConsolidationOptions options;
    options.max_utilization = max_util;
    std::vector<ConsolidationCandidate> list;
    for (int64_t id : select_captures(*source.reader(), choice, true, positionals[0])) {
      for (ConsolidationCandidate c : session.loaded(CaptureKey{0, id})->candidates) {
        decide_candidate(c, options);
        list.push_back(std::move(c));
      }
    }
    if (!memory_from.empty()) {
      const auto workloads = read_salus_workloads(memory_from);
      for (const auto& [capture, name] : job_of_capture)
        if (!workloads.count(name))
          throw InputError(memory_from, "", "no workload named '" + name + "'");
      for (auto& c : list)
        if (auto it = job_of_capture.find(c.capture_id); it != job_of_capture.end())
          apply_declared_memory(c, workloads.at(it->second), options);
    }
    if (format == "profiles") {
      // The sharer's job profiles (sharer/job_profile.h field names), one per job whose memory
      // is known, measured or declared; the sharer decides what to co-locate.
      json rows = json::array();
      for (const auto& c : list) {
        if ((!c.memory_measured && c.memory_source.empty()) || c.gpu_memory_bytes <= 0) continue;
        const sharer::JobProfile job = session.job_profile(c, 0, memory);
        json row = {{"job_id", job.job_id},
                    {"workflow", job.workflow},
                    {"gpu", job.gpu},
                    {"persistent_bytes", job.persistent_bytes},
                    {"ephemeral_peak_bytes", job.ephemeral_peak_bytes},
                    {"gpu_capacity_bytes", job.gpu_capacity_bytes},
                    {"utilization", job.utilization},
                    {"iteration_ns", job.iteration_ns},
                    {"labels", job.labels},
                    {"memory_evidence", job.memory_evidence}};
        if (job.peak_stddev_bytes >= 0) row["peak_stddev_bytes"] = job.peak_stddev_bytes;
        if (!c.memory_source.empty()) row["memory_source"] = c.memory_source;
        rows.push_back(std::move(row));
      }
      out << rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return 0;
    }
    if (format == "json") {
      json rows = json::array();
      for (const auto& c : list)
        rows.push_back({{"capture_id", c.capture_id},
                        {"workflow_id", c.workflow_id},
                        {"workflow", c.workflow},
                        {"user", c.user},
                        {"labels", c.labels},
                        {"device", c.device},
                        {"gpu_name", c.gpu_name},
                        {"gpu_memory_bytes", c.gpu_memory_bytes},
                        {"persistent_bytes", c.persistent_bytes},
                        {"ephemeral_peak_bytes", c.ephemeral_peak_bytes},
                        {"ephemeral_peak_stddev_bytes", c.ephemeral_peak_stddev_bytes},
                        {"gpu_uuid", c.gpu_uuid},
                        {"memory_measured", c.memory_measured},
                        {"memory_totals_known", c.memory_totals_known},
                        {"memory_source", c.memory_source},
                        {"memory_evidence", c.memory_evidence},
                        {"memory_evidence_detail", c.memory_evidence_detail},
                        {"memory_includes_context", c.memory_includes_context},
                        {"utilization", c.utilization},
                        {"iteration_ns", c.iteration_ns},
                        {"iterations", c.iterations},
                        {"candidate", c.co_location_candidate},
                        {"reason", c.reason}});
      out << rows.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return 0;
    }
    using Align = common::TextTable::Align;
    common::TextTable table({{"WORKFLOW", Align::left, 40},
                             {"GPU", Align::right},
                             {"UTIL", Align::right},
                             {"P (MiB)", Align::right},
                             {"T (MiB)", Align::right},
                             {"ITER", Align::right},
                             {"VERDICT"}});
    for (const auto& c : list) {
      table.add_row(
          {c.workflow, std::to_string(c.device), pct(c.utilization),
           !memory_known(c)         ? std::string("unknown")
           : !c.memory_totals_known ? ">= " + std::to_string(c.persistent_bytes >> 20)
                                    : std::to_string(c.persistent_bytes >> 20),
           memory_known(c) ? std::to_string(c.ephemeral_peak_bytes >> 20) : std::string("unknown"),
           format_duration(c.iteration_ns),
           std::string(c.co_location_candidate ? "candidate" : "keep") + " (" + c.reason + ")"});
      table.add_note("    P and T: " + c.memory_evidence + ": " + c.memory_evidence_detail);
    }
    table.print(out, wide);
    return 0;
  });
}

}  // namespace fleetscope::analyzer
