#include "fleetscope/importers/import_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "fleetscope/common/args.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/progress_line.h"
#include "fleetscope/importers/importers.h"

namespace fleetscope::importers {

// "512M", "2G", "1048576" -> bytes; nullopt when malformed or above 1 TiB.
std::optional<int64_t> parse_byte_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 13) return std::nullopt;
  int64_t value = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  int shift = 0;
  if (unit == "K" || unit == "k" || unit == "KiB")
    shift = 10;
  else if (unit == "M" || unit == "m" || unit == "MiB")
    shift = 20;
  else if (unit == "G" || unit == "g" || unit == "GiB")
    shift = 30;
  else if (!unit.empty())
    return std::nullopt;
  if (value > (int64_t{1} << (40 - shift))) return std::nullopt;
  return value << shift;
}

int run_import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  std::string output;
  bool force = false, quiet = false;
  std::string budget_text;
  int64_t jobs = 0;
  common::ArgParser parser(
      "fleetscope import FILE... -o OUT.db [--force]",
      "Imports PyTorch-profiler / Kineto Chrome-trace JSON (.json, .json.gz) and Nsight "
      "Systems SQLite exports (nsys export --type sqlite) into a new fleetscope trace "
      "database, one capture per file. The format is detected from the content. The "
      "output appears only when every file imported.");
  parser.positionals("FILE...", "trace files to import", &files, 1)
      .option("-o, --output", "OUT.db", "trace database to create", &output)
      .flag("--force", "replace OUT.db if it exists", &force)
      .option("--memory-budget", "BYTES",
              "memory for input in flight (default 1G; suffixes K, M, G): batches of JSON, one "
              "event or metadata value at most a quarter of it",
              &budget_text)
      .option("--jobs", "N",
              "files imported at once when several are given (default: one per core; 1: one "
              "after the other); they share the memory budget and the one database writer",
              &jobs)
      .flag("-q, --quiet", "no progress line on stderr (shown only on a terminal)", &quiet);
  if (auto rc = parser.parse(args, out, err)) return *rc;
  // One file named twice (the same path again, a link to it) is imported once, as `fleet` counts
  // it once: `import a.json ./a.json` made two identical captures, which doubled the job's
  // GPU-hours in every fleet view of the database.
  {
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    std::vector<std::string> distinct;
    for (const std::string& path : files) {
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0) {
        auto [at, added] = seen.emplace(std::pair{st.st_dev, st.st_ino}, path);
        if (!added) {
          err << "import: " << path << ": the same file as " << at->second << "; imported once\n";
          continue;
        }
      }
      distinct.push_back(path);  // unreadable ones too: the import names the problem
    }
    files = std::move(distinct);
  }
  if (output.empty()) {
    err << "error: missing -o OUT.db\nusage: fleetscope import FILE... -o OUT.db [--force]\n";
    return 2;
  }
  // An existing output (a link to nowhere too) only with --force; never an input's -wal/-shm.
  if (auto refusal = common::output_refusal(output, files, force)) {
    err << "error: " << *refusal << "\n";
    return 1;
  }
  if (jobs < 0 || jobs > 256) {
    err << "error: --jobs " << jobs << ": expected a number of files from 1 to 256 (0: one per "
        << "core)\n";
    return 2;
  }
  ImportOptions options;
  options.progress_every_events = 20000;
  options.parallel_files = static_cast<size_t>(jobs);
  if (!budget_text.empty()) {
    const auto budget = parse_byte_size(budget_text);
    if (!budget || *budget < (int64_t{16} << 20)) {
      err << "error: --memory-budget '" << budget_text
          << "': expected a size of at least 16M (e.g. 512M, 2G)\n";
      return 2;
    }
    options.memory_budget_bytes = *budget;
  }
  // A progress line on a terminal only (common/progress_line.h); pipes and logs get the summary.
  common::ProgressLine line(err, "import", !quiet && isatty(STDERR_FILENO) == 1);
  if (line.enabled()) {
    options.progress = [&line](const ImportProgress& p) {
      if (p.done) return line.finish();
      line.update(p.bytes_done, p.bytes_total, "bytes", p.events);
    };
  }
  try {
    auto results = import_files(files, output, options, force);
    line.finish();
    for (const auto& r : results) err << summary_line(r) << "\n";
    out << output << "\n";
    return 0;
  } catch (const InputError& e) {
    line.finish();
    err << "error: " << e.what() << "\n";
    return 1;
  } catch (const Error& e) {
    line.finish();
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace fleetscope::importers
