#include "fleetscope/export/export_command.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include "fleetscope/common/args.h"
#include "fleetscope/common/capture_choice.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/common/progress_line.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::exporter {

int run_export_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> positionals;
  std::string output_path;
  std::string format = "chrome";
  std::string capture_text;
  bool no_flows = false;
  bool counters = false;
  bool quiet = false, force = false;
  common::ArgParser parser(
      "fleetscope export DB|TRACE|NSYS.sqlite -o FILE [--format chrome] [--capture ID|all] "
      "[--counters] [--force]",
      "Write a trace database (or one capture) as Chrome-trace JSON for Perfetto, "
      "chrome://tracing\n"
      "and the Kineto tool chain (HTA, TensorBoard); an nsys SQLite export (or a Kineto trace) "
      "is imported in memory first.\n"
      "FILE ending in .gz is gzip-compressed.\n"
      "The output appears only when complete (temporary file, then rename).");
  parser
      .positionals("DB", "trace database, nsys SQLite export or Kineto trace to export",
                   &positionals, 1, 1)
      .option("-o, --output", "FILE", "output file (.json or .json.gz)", &output_path)
      .option("--format", "FORMAT", "output format: chrome (default)", &format)
      .option("--capture", "ID|all", "export only this capture (default: all)", &capture_text)
      .flag("--no-flows", "leave out the launch -> kernel flow arrows", &no_flows)
      .flag("--counters",
            "add HTA's generate_trace_with_counters tracks: launch-queue length per stream and "
            "copy bandwidth per kind (loads the capture's GPU work and launch calls in memory)",
            &counters)
      .flag("--force", "replace FILE if it exists (as `import --force`)", &force)
      .flag("--quiet", "no progress on stderr", &quiet);
  if (auto code = parser.parse(args, out, err)) return *code;
  if (output_path.empty()) {
    err << "error: missing -o FILE\nusage: fleetscope export DB -o FILE (see --help)\n";
    return 2;
  }
  if (auto refusal = common::output_refusal(output_path, positionals, force)) {
    err << "error: " << *refusal << "\n";
    return 1;
  }
  if (format != "chrome") {
    err << "error: unknown --format '" << format << "' (supported: chrome)\n";
    return 2;
  }

  common::CaptureChoice choice;
  try {
    choice = common::parse_capture_choice(capture_text);
  } catch (const std::invalid_argument& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  ChromeExportOptions options;
  options.capture_id = choice.id;
  options.flows = !no_flows;
  options.analysis_counters = counters;
  options.replace_existing = force;
  common::ProgressLine line(err, "export", !quiet && isatty(STDERR_FILENO) == 1);
  int64_t total_events = 0;
  if (line.enabled())
    options.on_progress = [&line, &total_events](int64_t events) {
      line.update(events, total_events, "events");
    };
  try {
    const importers::OpenedInput input = importers::open_input(positionals[0]);
    const store::Reader reader = input.reader();
    if (choice.id && !reader.capture(*choice.id))
      throw InputError(positionals[0], "table captures",
                       "no capture with id " + std::to_string(*choice.id) + " (`fleetscope info " +
                           positionals[0] + "` lists them)");
    const ChromeExportStats stats = export_chrome(reader, output_path, options);
    line.finish();
    out << "wrote " << output_path << ": " << stats.events << " events (" << stats.kernels
        << " kernels, " << stats.memcpys << " memcpys, " << stats.memsets << " memsets, "
        << stats.runtime_calls << " runtime calls, " << stats.cpu_ops << " cpu ops, " << stats.flows
        << " flows, " << stats.findings << " findings, " << stats.queue_length_points
        << " queue-length and " << stats.bandwidth_points
        << " bandwidth counter points), base time " << stats.base_time_ns << " ns\n";
    return 0;
  } catch (const std::exception& error) {
    line.finish();
    err << "error: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace fleetscope::exporter
