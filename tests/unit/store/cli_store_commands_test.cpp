#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_run.h"
#include "fleetscope/cli/command.h"
#include "fleetscope/cli/daemon_commands.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

using namespace fleetscope;

namespace {
using test_support::CliRun;
CliRun run(const std::vector<std::string>& args) {
  return test_support::run_cli(args);
}
std::string make_db(const test_support::TempDir& dir) {
  std::string path = dir.file("t.db");
  store::Writer w(store::Database::create(path));
  int64_t cap = w.add_capture({.source = "kineto-json",
                               .source_path = "x.json",
                               .start_ns = 1000,
                               .end_ns = 2000001000,
                               .gpu_vendor = "nvidia"});
  w.add_gpu({.id = 0, .captureId = cap, .name = "NVIDIA A100", .smCount = 108});
  // A rank without a world size (seen in real Kineto traces) must print, not fail.
  w.upsert_process({.globalPid = store::global_pid(7), .pid = 7, .rank = 3});
  store::Kernel k;
  k.start = 1000;
  k.end = 2000;
  k.demangledName = "k";
  k.captureId = cap;
  w.add(k);
  w.finish();
  return path;
}
}  // namespace

TEST(Cli, VersionHelpAndUsageErrors) {
  EXPECT_EQ(run({"--version"}).code, 0);
  EXPECT_NE(run({"--version"}).out.find("fleetscope "), std::string::npos);
  EXPECT_EQ(run({"--help"}).code, 0);
  EXPECT_NE(run({"--help"}).out.find("info"), std::string::npos);
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"no-such-command"}).code, 2);
  EXPECT_EQ(run({"info"}).code, 2);
  EXPECT_EQ(run({"info", "--bogus", "x"}).code, 2);
  CliRun group = run({"share", "bogus"});
  EXPECT_EQ(group.code, 2);
  EXPECT_EQ(group.err.rfind("error: unknown share subcommand 'bogus'\nusage: fleetscope share "
                            "SUBCOMMAND\n",
                            0),
            0u)
      << group.err;
  EXPECT_EQ(run({"share"}).err.rfind("usage: fleetscope share SUBCOMMAND\n", 0), 0u);
  for (const cli::Command& c : cli::commands()) {
    std::vector<std::string> args;
    std::stringstream ss(c.name);
    for (std::string w; ss >> w;) args.push_back(w);
    args.push_back("--help");
    CliRun r = run(args);
    EXPECT_EQ(r.code, 0) << c.name;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << c.name;
  }
}

// `trace` numbers out of range name the option and its bound (before the daemon is asked):
// `--duration-ms 99999999999` said "value out of range", `--pid -5` "give exactly one of --pid
// and --workflow" (one was given).
TEST(Cli, TraceNumbersOutOfRangeNameTheirOption) {
  CliRun r = run({"trace", "--pid", "42", "--duration-ms", "99999999999"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: option '--duration-ms' expects N <= 2147483647, got 99999999999"),
            std::string::npos)
      << r.err;
  r = run({"trace", "--pid", "-5", "--duration-ms", "100"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: option '--pid' expects PID >= 1, got -5"), std::string::npos)
      << r.err;
  r = run({"trace", "--workflow", "w", "--iterations", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: option '--iterations' expects N >= 1, got 0"), std::string::npos)
      << r.err;
  r = run({"trace", "--pid", "4294967296", "--iterations", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: option '--pid' expects PID <= 2147483647, got 4294967296"),
            std::string::npos)
      << r.err;
}

// `metrics --since` ages that are no time (nan), endless (inf) or beyond any clock: 'inf', 'nan'
// and '99999999999999d' were cast to int64 (undefined) and listed windows as if no bound was given.
TEST(Cli, MetricsSinceAnAgeBeyondAnyClockIsRefused) {
  EXPECT_EQ(cli::parse_age("90s"), 90'000'000'000);
  EXPECT_EQ(cli::parse_age("1.5m"), 90'000'000'000);
  EXPECT_EQ(cli::parse_age("36500d"), int64_t{36500} * 86400 * 1'000'000'000);
  // (Decimal only: std::stod also took hex, '0x10' as 16 s, and ' 5s' or '+5s'.)
  for (const std::string age :
       {"inf", "nan", "99999999999999d", "36501d", " 5s", "+5s", "-0", ".5s", ""}) {
    try {
      cli::parse_age(age);
      ADD_FAILURE() << age << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "'" + age + "' is not an age from 0 to 36500 days like 90s, 10m, 2h or 1d");
    }
  }
  EXPECT_THROW(cli::parse_age("0x10"), std::invalid_argument);  // 0, then the unit "x10"
  CliRun r = run({"metrics", "--since", "inf", "--socket", "/nonexistent/api.sock"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("error: --since: 'inf' is not an age"), std::string::npos) << r.err;
}

// `metrics --since 0s` asked for windows ending at or after "now" and printed "no metrics yet"
// (issue 23). 0 is "no limit" for the CLI's other bounds (--timeout 0, --top 0, --memory-limit 0),
// so an age of 0 asks for every window.
TEST(Cli, MetricsSinceZeroMeansEveryWindow) {
  const int64_t now = 1'700'000'000'000'000'000;
  for (const std::string zero : {"0", "0s", "0m", "0.0h", "0d"})
    EXPECT_EQ(cli::since_bound(zero, now), std::nullopt) << zero;
  EXPECT_EQ(cli::since_bound("90s", now), now - 90'000'000'000);
  EXPECT_EQ(cli::since_bound("1d", now), now - int64_t{86400} * 1'000'000'000);
  EXPECT_THROW(cli::since_bound("-1s", now), std::invalid_argument);
  CliRun help = run({"metrics", "--help"});
  EXPECT_NE(help.out.find("(0 = all)"), std::string::npos) << help.out;
  // A usage error it is not: the daemon is asked (and here not found).
  CliRun r = run({"metrics", "--since", "0s", "--socket", "/nonexistent/api.sock"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot reach fleetscoped"), std::string::npos) << r.err;
}

// `share apply FIFO` waited for a writer for ever; a directory was sent to the daemon as an empty
// plan. Both are named before the daemon is asked.
TEST(Cli, ShareApplyNamesAFifoOrADirectoryAsThePlan) {
  test_support::TempDir dir;
  const std::string fifo = dir.file("plan.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = run({"share", "apply", fifo, "--socket", "/nonexistent/api.sock"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error: cannot read " + fifo + ": not a regular file; expected a plan"),
            std::string::npos)
      << r.err;
  r = run({"share", "apply", dir.path().string(), "--socket", "/nonexistent/api.sock"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("it is a directory; expected a plan"), std::string::npos) << r.err;
}

// A daemon address whose port is not one: '127.0.0.1:abc' said "error: stoi"; a TLS file that
// cannot be read was an OpenSSL error number blamed on the daemon's trust.
TEST(Cli, ADaemonAddressOrTlsFileThatCannotBeUsedIsNamed) {
  for (const std::string port : {"abc", "80x", "0", "65536", "99999999999"}) {
    CliRun r = run({"status", "--socket", "127.0.0.1:" + port});
    EXPECT_EQ(r.code, 1) << port;
    EXPECT_NE(r.err.find("error: daemon address '127.0.0.1:" + port + "': the port '" + port +
                         "' is not a number from 1 to 65535 (expected HOST:PORT)"),
              std::string::npos)
        << r.err;
  }
  CliRun r = run({"status", "--socket", "127.0.0.1:1", "--tls-cert", "/nonexistent/client.pem"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error: cannot read /nonexistent/client.pem: no such file; expected a PEM "
                       "client certificate (--tls-cert)"),
            std::string::npos)
      << r.err;
}

// `fleet --prometheus URL --range R` put R into the PromQL text as given: '1 day' came back as
// Prometheus' parse error, '1d]) or vector(1' changed the query. A range that is no duration is a
// usage error before any server is asked (none listens on port 1 here).
TEST(Cli, PrometheusFleetRangeMustBeADuration) {
  for (const std::string range : {"1 day", "1d]) or vector(1", "h", "1.5h", "-1h", "1x"}) {
    CliRun r = run({"fleet", "--prometheus", "http://127.0.0.1:1", "--range", range});
    EXPECT_EQ(r.code, 2) << range << ": " << r.err;
    EXPECT_NE(r.err.find("error: --range expects a Prometheus duration such as 1h, 1d or 1h30m"),
              std::string::npos)
        << r.err;
  }
  for (const std::string range : {"1h", "1d", "1h30m", "500ms", "2w", "0s"}) {
    CliRun r = run({"fleet", "--prometheus", "http://127.0.0.1:1", "--range", range});
    EXPECT_EQ(r.code, 1) << range << ": " << r.err;  // the server, not the range
    EXPECT_NE(r.err.find("cannot connect to 127.0.0.1:1"), std::string::npos) << r.err;
  }
}

TEST(Cli, InfoTableAndJson) {
  test_support::TempDir dir;
  std::string db = make_db(dir);
  CliRun table = run({"info", db});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("NVIDIA A100, 108 SMs"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("kernels=1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("process 7  rank 3\n"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("2.000 s"), std::string::npos) << table.out;
  CliRun json = run({"info", "--format", "json", db});
  ASSERT_EQ(json.code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["captures"][0]["counts"]["kernels"], 1);
  EXPECT_EQ(j["captures"][0]["duration_ns"], 2000000000);
  EXPECT_EQ(j["captures"][0]["devices"][0]["sm_count"], 108);
}

TEST(Cli, InfoOnBadFileExitsOne) {
  test_support::TempDir dir;
  CliRun r = run({"info", dir.file("missing.db")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.db"), std::string::npos);
}

TEST(Cli, SqlFormats) {
  test_support::TempDir dir;
  std::string db = make_db(dir);
  CliRun csv =
      run({"sql", "--format", "csv", db, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out, "start,end\n1000,2000\n");
  CliRun json = run({"sql", "--format=json", db, "SELECT value FROM StringIds"});
  EXPECT_EQ(nlohmann::json::parse(json.out)[0]["value"], "k");
  CliRun bad = run({"sql", db, "DROP TABLE captures"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("read-only"), std::string::npos);
}
