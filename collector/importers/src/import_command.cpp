#include "fleetscope/importers/import_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "fleetscope/common/args.h"
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
      .flag("-q, --quiet", "no progress lines on stderr", &quiet);
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
  options.progress_every_events = 100000;
  if (!quiet) {
    auto t0 = std::chrono::steady_clock::now();
    options.progress = [&err, t0](const ImportProgress& p) {
      if (p.done) return;
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      err << "import: " << p.path << ": " << p.events << " events";
      if (p.bytes_total > 0)
        err << ", " << (p.bytes_done >> 20) << "/" << (p.bytes_total >> 20) << " MiB ("
            << (100 * p.bytes_done / p.bytes_total) << "%)";
      char t[32];
      std::snprintf(t, sizeof t, ", %.1f s", s);
      err << t << "\n";
    };
  }
  try {
    auto results = import_files(files, output, options, force);
    for (const auto& r : results) err << summary_line(r) << "\n";
    out << output << "\n";
    return 0;
  } catch (const InputError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace fleetscope::importers
