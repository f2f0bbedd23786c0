#include "fleetscope/launcher/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>

#include "fleetscope/common/args.h"
#include "fleetscope/common/file_errors.h"
#include "fleetscope/launcher/agent_locator.h"
#include "fleetscope/launcher/child_process.h"
#include "fleetscope/launcher/merge_parts.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::launcher {
namespace fs = std::filesystem;
namespace {

constexpr const char* kUsage =
    "fleetscope run [--delay-ms N] [--duration-ms N | --iterations N] [-o OUT.db [--force]] -- "
    "CMD ARGS...";
constexpr const char* kDescription =
    "Runs CMD with the fleetscope agent injected (CUDA_INJECTION64_PATH) and writes what its CUDA\n"
    "processes did on the GPU into one trace database, like `nsys profile`. Child processes are\n"
    "traced too. The exit code of CMD is passed through (128 + N when a signal N killed it).\n"
    "By default the window covers the whole run; --iterations counts NVTX ranges named\n"
    "ProfilerStep#N or step (see --step-names), from the next step on. Each process's rows are\n"
    "committed batch by batch: a job stopped by SIGTERM, SIGINT or abort() keeps what was\n"
    "flushed, and its capture says 'partial' in its note.\n"
    "With --share (or --share-if-planned) CMD runs in a GPU memory lane the host daemon grants\n"
    "(see `fleetscope run --share --help`).";

struct RunOptions {
  int64_t delay_ms = 0, duration_ms = 0, iterations = 0, buffer_size_kb = 0, buffer_pool_mb = 0;
  bool force = false;
  std::string output, step_names, runtime_filter;
  std::vector<std::string> command;
};

std::string default_output() {
  for (int n = 1;; ++n) {
    std::string name = n == 1 ? "fleetscope-run.db" : "fleetscope-run-" + std::to_string(n) + ".db";
    if (!fs::exists(name)) return name;
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : " ") + w;
  return text;
}

std::vector<std::string> finished_parts(const fs::path& dir) {
  std::vector<std::string> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    // Temporary files of processes that died mid-write are not parts.
    if (name.rfind("part-", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".db")
      parts.push_back(entry.path().string());
  }
  std::sort(parts.begin(), parts.end());
  return parts;
}

void print_summary(const std::string& path, std::ostream& out) {
  store::Reader reader(path);
  out << "captures: " << reader.captures().size() << "\n";
  for (const store::TableCount& count : reader.counts())
    out << "  " << count.table << ": " << count.rows << "\n";
}

int64_t gpu_rows(const std::string& path) {
  store::Reader reader(path);
  int64_t rows = 0;
  for (const store::TableCount& count : reader.counts())
    if (count.table == "CUPTI_ACTIVITY_KIND_KERNEL" ||
        count.table == "CUPTI_ACTIVITY_KIND_MEMCPY" || count.table == "CUPTI_ACTIVITY_KIND_MEMSET")
      rows += count.rows;
  return rows;
}

// A launcher failure after CMD ran keeps CMD's failure visible, else reports 1.
int failed(int command_code) {
  return command_code != 0 ? command_code : 1;
}

}  // namespace

int run_run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                    const InfoPrinter& print_info) {
  RunOptions o;
  common::ArgParser parser(kUsage, kDescription);
  parser.option("--delay-ms", "N", "open the trace window N ms after CUDA starts", &o.delay_ms)
      .option("--duration-ms", "N", "close the window N ms after it opened", &o.duration_ms)
      .option("--iterations", "N", "trace N iterations (NVTX step ranges), from the first one",
              &o.iterations)
      .option("--step-names", "LIST",
              "NVTX range names marking iterations (default ProfilerStep#,step)", &o.step_names)
      .option("--buffer-size-kb", "N", "size of each CUPTI activity buffer (default 4096)",
              &o.buffer_size_kb)
      .option("--buffer-pool-mb", "N",
              "cap on all activity buffers together; past it records are dropped and counted "
              "(default 128)",
              &o.buffer_pool_mb)
      .option("--runtime-filter", "LIST",
              "runtime calls not stored, comma-separated (default: Kineto's list; 'none')",
              &o.runtime_filter)
      .option("-o, --output", "OUT.db", "trace database to write (default fleetscope-run.db)",
              &o.output)
      .flag("--force", "replace OUT.db if it exists (as `import --force`)", &o.force)
      .rest(&o.command);
  if (auto code = parser.parse(args, out, err)) return *code;
  auto usage_error = [&](const std::string& message) {
    err << "error: " << message << "\nusage: " << kUsage << "\n(see --help)\n";
    return 2;
  };
  if (o.command.empty()) return usage_error("missing the command to trace (after --)");
  if (o.duration_ms > 0 && o.iterations > 0)
    return usage_error("--duration-ms and --iterations exclude each other");
  if (o.delay_ms < 0 || o.duration_ms < 0 || o.iterations < 0 || o.buffer_size_kb < 0 ||
      o.buffer_pool_mb < 0)
    return usage_error("negative values are not allowed");
  if (o.output.empty()) o.output = default_output();
  // The output is checked before the job runs, not after it (a training run is not repeated for
  // a typo), and an existing trace is replaced only with --force, as `import` does: it used to be
  // overwritten silently when the job ended.
  if (auto problem = common::output_problem(o.output)) {
    err << "error: " << common::cannot_write(o.output, *problem) << "\n";
    return 1;
  }
  std::error_code exists_error;
  if (!o.force && fs::exists(fs::symlink_status(o.output, exists_error))) {
    err << "error: " << o.output << ": already exists (use --force to replace it)\n";
    return 1;
  }

  std::string searched;
  std::optional<std::string> agent = find_agent(searched);
  if (!agent) {
    err << "error: cannot find libfleetscope_agent.so (looked at " << searched
        << "); set FLEETSCOPE_AGENT_PATH\n";
    return 1;
  }
  fs::path output = fs::absolute(o.output);
  std::error_code ec;
  if (!fs::is_directory(output.parent_path(), ec)) {
    err << "error: " << o.output << ": directory " << output.parent_path().string()
        << " does not exist\n";
    return 1;
  }
  fs::path part_dir = output.string() + ".parts-" + std::to_string(getpid());
  if (!fs::create_directory(part_dir, ec)) {
    err << "error: cannot create " << part_dir.string() << ": " << ec.message() << "\n";
    return 1;
  }

  std::vector<std::pair<std::string, std::string>> env = {
      {"CUDA_INJECTION64_PATH", *agent},
      {"FLEETSCOPE_PART_DIR", part_dir.string()},
      {"FLEETSCOPE_DELAY_MS", std::to_string(o.delay_ms)},
      {"FLEETSCOPE_DURATION_MS", std::to_string(o.duration_ms)},
      {"FLEETSCOPE_ITERATIONS", std::to_string(o.iterations)},
  };
  if (!o.step_names.empty()) env.emplace_back("FLEETSCOPE_STEP_NAMES", o.step_names);
  if (o.buffer_size_kb > 0)
    env.emplace_back("FLEETSCOPE_BUFFER_SIZE_KB", std::to_string(o.buffer_size_kb));
  if (o.buffer_pool_mb > 0)
    env.emplace_back("FLEETSCOPE_BUFFER_POOL_MB", std::to_string(o.buffer_pool_mb));
  if (!o.runtime_filter.empty()) env.emplace_back("FLEETSCOPE_RUNTIME_FILTER", o.runtime_filter);
  if (auto cupti = find_cupti(*agent)) {
    env.emplace_back("FLEETSCOPE_CUPTI_PATH", *cupti);
    // NVTX reports ranges to the library this names; CUPTI turns them into MARKER records.
    if (!std::getenv("NVTX_INJECTION64_PATH")) env.emplace_back("NVTX_INJECTION64_PATH", *cupti);
    // libcupti mapped at process start, before the CUDA runtime registers its exit handler: the
    // configuration in which every sample exited cleanly with exact counts on an H100, where a
    // libcupti loaded later died of SIGSEGV at exit (docs/agent.md, "On a GPU").
    // Not in AddressSanitizer builds (the asan preset, CPU tests only): their runtime must be the
    // first library a process maps, and a preloaded one comes before it.
#ifndef __SANITIZE_ADDRESS__
    const char* preload = std::getenv("LD_PRELOAD");
    env.emplace_back("LD_PRELOAD", preload && *preload ? *cupti + " " + preload : *cupti);
#endif
  }

  err << "fleetscope run: tracing '" << joined(o.command) << "'\n";
  err.flush();
  std::string child_error;
  int code = run_child(o.command, env, child_error);
  if (!child_error.empty()) err << "error: " << child_error << "\n";

  std::vector<std::string> parts = finished_parts(part_dir);
  try {
    if (parts.empty()) {
      fs::remove_all(part_dir, ec);
      err << "fleetscope run: no GPU work was captured: no process of the command initialized CUDA "
             "with the agent, or the trace window never opened (is there a GPU and a driver on "
             "this "
             "machine?); nothing written\n";
      return code;
    }
    if (parts.size() == 1) {
      fs::rename(parts[0], output);  // same directory: atomic
    } else {
      err << "fleetscope run: merging " << parts.size() << " process traces\n";
      merge_parts(parts, output.string());
    }
    fs::remove_all(part_dir, ec);
    if (gpu_rows(output.string()) == 0)
      err << "fleetscope run: no GPU work was captured in the trace window (the trace is written "
             "anyway)\n";
    if (print_info)
      print_info({output.string()}, out, err);
    else
      print_summary(output.string(), out);
    out << "trace: " << output.string() << "\n";
  } catch (const std::exception& e) {
    fs::remove_all(part_dir, ec);
    err << "error: " << e.what() << "\n";
    return failed(code);
  }
  return code;
}

}  // namespace fleetscope::launcher
