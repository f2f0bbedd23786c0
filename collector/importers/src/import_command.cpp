#include "fleetscope/importers/import_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "fleetscope/common/args.h"
#include "fleetscope/common/progress_line.h"
#include "fleetscope/importers/importers.h"

namespace fleetscope::importers {

int run_import_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files;
  std::string output;
  bool force = false, quiet = false;
  common::ArgParser parser(
      "fleetscope import FILE... -o OUT.db [--force]",
      "Imports PyTorch-profiler / Kineto Chrome-trace JSON (.json, .json.gz) and Nsight "
      "Systems SQLite exports (nsys export --type sqlite) into a new fleetscope trace "
      "database, one capture per file. The format is detected from the content. The "
      "output appears only when every file imported.");
  parser.positionals("FILE...", "trace files to import", &files, 1)
      .option("-o, --output", "OUT.db", "trace database to create", &output)
      .flag("--force", "replace OUT.db if it exists", &force)
      .flag("-q, --quiet", "no progress line on stderr (shown only on a terminal)", &quiet);
  if (auto rc = parser.parse(args, out, err)) return *rc;
  if (output.empty()) {
    err << "error: missing -o OUT.db\nusage: fleetscope import FILE... -o OUT.db [--force]\n";
    return 2;
  }
  std::error_code ec;
  if (!force && std::filesystem::exists(output, ec)) {
    err << "error: " << output << ": already exists (use --force to replace it)\n";
    return 1;
  }
  ImportOptions options;
  options.progress_every_events = 20000;
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
