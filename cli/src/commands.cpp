// The table of `fleetscope` subcommands. Each entry calls into the library that owns the logic.
#include "fleetscope/analyzer/commands.h"
#include "fleetscope/cli/command.h"
#include "fleetscope/cli/daemon_commands.h"
#include "fleetscope/cli/prometheus_fleet.h"
#include "fleetscope/cli/share_commands.h"
#include "fleetscope/cli/store_commands.h"
#include "fleetscope/export/export_command.h"
#include "fleetscope/importers/import_command.h"
#include "fleetscope/launcher/run_command.h"
#include "fleetscope/sharer/commands.h"
#include "fleetscope/store/read_policy.h"

namespace fleetscope::cli {
namespace {

// Every command that reads trace files has a time and a memory budget, so that no file (a planted
// one, or one damaged into something endless or huge) keeps it busy for ever or takes the host's
// memory: --timeout SECONDS (default an hour, 0 = none) for all the databases it opens, and
// --memory-limit SIZE (default store::default_read_memory_limit(), 0 = none) for the whole command
// (store/read_policy.h). `sql` keeps its own --timeout per query and takes the memory budget.
constexpr double kDefaultReadSeconds = 3600;

enum class TimeBudget { per_command, own };

// Sets the budget for the command's run and removes it however the run ends.
struct ReadBudgets {
  ReadBudgets(double seconds, uint64_t memory_bytes) {
    store::set_read_time_limit(seconds);
    store::set_read_memory_limit(memory_bytes);
  }
  ~ReadBudgets() {
    store::set_read_memory_limit(0);
    store::set_read_time_limit(0);
  }
  ReadBudgets(const ReadBudgets&) = delete;
  ReadBudgets& operator=(const ReadBudgets&) = delete;
};

CommandFn with_read_budget(CommandFn run, TimeBudget time = TimeBudget::per_command) {
  return [run = std::move(run), time](const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err) {
    std::vector<std::string> rest;
    double seconds = time == TimeBudget::own ? 0 : kDefaultReadSeconds;
    uint64_t memory_bytes = store::default_read_memory_limit();
    bool help = false;
    for (size_t i = 0; i < args.size(); ++i) {
      const bool timeout = time == TimeBudget::per_command &&
                           (args[i] == "--timeout" || args[i].rfind("--timeout=", 0) == 0);
      const bool memory = args[i] == "--memory-limit" || args[i].rfind("--memory-limit=", 0) == 0;
      if (!timeout && !memory) {
        help = help || args[i] == "--help" || args[i] == "-h";
        rest.push_back(args[i]);
        continue;
      }
      std::string value;
      if (const size_t equals = args[i].find('='); equals != std::string::npos)
        value = args[i].substr(equals + 1);
      else if (i + 1 < args.size())
        value = args[++i];
      if (memory) {
        const auto bytes = importers::parse_byte_size(value);
        if (!bytes || (*bytes != 0 && *bytes < (int64_t{1} << 20))) {
          err << "error: --memory-limit expects a size of at least 1M (e.g. 512M, 4G; 0 = no "
                 "limit), got '"
              << value << "'\n";
          return 2;
        }
        memory_bytes = static_cast<uint64_t>(*bytes);
        continue;
      }
      size_t used = 0;
      try {
        seconds = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size() || !(seconds >= 0) || seconds > 1e9) {
        err << "error: --timeout expects a number of seconds >= 0, got '" << value << "'\n";
        return 2;
      }
    }
    int code = 1;
    try {
      ReadBudgets budgets(seconds, memory_bytes);
      code = run(rest, out, err);
    } catch (const store::MemoryBudgetExceeded& e) {
      // A command that lets the failed allocation through (rather than reporting it itself).
      err << "error: " << e.what() << "\n";
      return 1;
    }
    if (help) {
      if (time == TimeBudget::per_command)
        out << "  --timeout SECONDS  stop reading the databases after SECONDS (default "
            << kDefaultReadSeconds << ", 0 = no limit)\n";
      out << "  --memory-limit SIZE  stop with an error naming the file when the command would "
             "take more memory (default "
          << (store::default_read_memory_limit() >> 20) << "M here: half the physical memory, "
          << "1G to 16G; 0 = no limit)\n";
    }
    return code;
  };
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "summarize a trace database (devices, processes, span, counts)",
       with_read_budget(run_info_command)},
      {"sql", "run a read-only SQL query on a trace database",
       with_read_budget(run_sql_command, TimeBudget::own)},
      {"migrate", "upgrade trace databases from older fleetscope builds, in place",
       run_migrate_command},
      {"import", "import Kineto/PyTorch-profiler JSON or nsys SQLite exports into a trace database",
       importers::run_import_command},
      {"run",
       "trace a command on the GPU with the fleetscope agent (like nsys profile); --share: in a "
       "memory lane",
       [](const std::vector<std::string>& a, std::ostream& o, std::ostream& e) {
         if (wants_share(a)) return run_shared_command(a, o, e, run_info_command);
         return launcher::run_run_command(a, o, e, run_info_command);
       }},
      {"analyze", "run the antipattern rules on a capture and store the findings",
       with_read_budget(analyzer::run_analyze_command)},
      {"report", "a capture's report: analysed now (html, markdown, table, json, chrome-trace)",
       with_read_budget(analyzer::run_report_command)},
      {"fleet", "rank jobs by wasted GPU-hours across trace databases or a Prometheus server",
       [](const std::vector<std::string>& a, std::ostream& o, std::ostream& e) {
         for (const auto& arg : a)
           if (arg == "--prometheus" || arg.rfind("--prometheus=", 0) == 0)
             return run_prometheus_fleet(a, o, e);
         return with_read_budget(analyzer::run_fleet_command)(a, o, e);
       }},
      {"diff", "compare the metrics of two captures", with_read_budget(analyzer::run_diff_command)},
      {"candidates",
       "jobs that could share a GPU: utilization, persistent P and ephemeral T memory",
       with_read_budget(analyzer::run_candidates_command)},
      {"export", "write a trace database (or one capture) as Chrome-trace JSON for Perfetto",
       with_read_budget(exporter::run_export_command)},
      {"share plan", "plan GPU consolidation: which jobs share which GPU memory lane",
       with_read_budget(sharer::run_share_plan_command)},
      {"share calibrate",
       "fit the interference model to co-location measurements (scripts/gpu-check)",
       sharer::run_share_calibrate_command},
      {"share status", "the daemon's lanes, queued jobs, plans and sharing events",
       run_share_status_command},
      {"share apply", "send a plan to the daemon (--auto: measure and withdraw when too slow)",
       run_share_apply_command},
      {"share off", "stop sharing: new jobs unshared, lanes released as jobs end",
       run_share_off_command},
      {"share on", "sharing back on after `share off` (its plan applies again)",
       run_share_on_command},
      {"share auto", "automatic mode on|off for the active plan", run_share_auto_command},
      {"share ledgers", "lane ledgers no lane of the daemon owns (--remove deletes them)",
       run_share_ledgers_command},
      {"advise",
       "which GPU type and how many for a job: its step time on other GPUs from a capture",
       sharer::run_advise_command},
      {"sim", "simulate scheduling policies and GPU lanes on a job trace", sharer::run_sim_command},
      {"status", "the host daemon: agents, GPUs, open trace windows", run_status_command},
      {"jobs", "jobs running with the agent on this host, and their captures", run_jobs_command},
      {"trace", "trace a running job on demand through the daemon (like dyno gputrace)",
       run_trace_command},
      {"metrics", "always-on per-workflow GPU metrics from the daemon", run_metrics_command},
      // COMMANDS: one line per command; keep this marker.
  };
  return table;
}

}  // namespace fleetscope::cli
