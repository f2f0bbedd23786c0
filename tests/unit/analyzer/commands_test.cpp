#include "fleetscope/analyzer/commands.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "db_fixture.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/common/csv.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/capture_rows.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {
namespace {

using nlohmann::json;

struct Result {
  int code;
  std::string out, err;
};

template <class Fn>
Result call(Fn fn, std::vector<std::string> args) {
  std::ostringstream out, err;
  int code = fn(args, out, err);
  return {code, out.str(), err.str()};
}

class Commands : public ::testing::Test {
 protected:
  void SetUp() override { ids = testing::write_shared_case(db); }
  testing::TempDir dir;
  std::string db = dir.file("t.db");
  testing::FixtureIds ids;
};

TEST_F(Commands, AnalyzePrintsAndStoresFindings) {
  auto r = call(run_analyze_command, {db});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("launch_delay_outliers"), std::string::npos);
  EXPECT_NE(r.out.find("pageable_memcpy"), std::string::npos);
  EXPECT_NE(r.out.find("HTA temporal breakdown"), std::string::npos);
  // Which capture it read, on stderr.
  EXPECT_NE(r.err.find("analyze: capture " + std::to_string(ids.capture) + " of " + db +
                       ": 2 finding(s)"),
            std::string::npos)
      << r.err;
  store::Reader reader(db);
  EXPECT_EQ(reader.findings(ids.capture).size(), 2u);
}

TEST_F(Commands, AnalyzeReadsThresholdsFromAConfigFileAndSetWins) {
  const std::string config = dir.file("thresholds.conf");
  std::ofstream(config) << "[pageable_memcpy]\nmin_count = 5  # five copies before we care\n";
  auto quiet =
      call(run_analyze_command, {db, "--format", "json", "--no-store", "--config", config});
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  const json quiet_doc = json::parse(quiet.out);
  ASSERT_FALSE(quiet_doc["findings"].empty());
  for (const json& f : quiet_doc["findings"]) EXPECT_NE(f["rule"], "pageable_memcpy");
  auto loud = call(run_analyze_command, {db, "--format", "json", "--no-store", "--config", config,
                                         "--set", "pageable_memcpy.min_count=1"});
  ASSERT_EQ(loud.code, 0) << loud.err;
  bool found = false;
  const json loud_doc = json::parse(loud.out);
  for (const json& f : loud_doc["findings"]) found = found || f["rule"] == "pageable_memcpy";
  EXPECT_TRUE(found);
  std::ofstream(config) << "pageable_memcpy.min_count = many\n";
  auto bad = call(run_analyze_command, {db, "--no-store", "--config", config});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "error: " + config + ": line 1: expected a number after '=', got 'many'\n");
}

TEST_F(Commands, AnalyzeJsonNoStoreAndRuleSelection) {
  auto r = call(run_analyze_command,
                {db, "--format", "json", "--no-store", "--rules", "pageable_memcpy"});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  ASSERT_EQ(doc["findings"].size(), 1u);
  EXPECT_EQ(doc["findings"][0]["rule"], "pageable_memcpy");
  store::Reader reader(db);
  EXPECT_TRUE(reader.findings(ids.capture).empty());
}

TEST_F(Commands, AnalyzeThresholdOverrideAndOutputFile) {
  const std::string file = dir.file("findings.trace.json");
  auto r = call(run_analyze_command, {db, "--set", "low_gpu_utilization.min_utilization=0.9",
                                      "--format", "chrome-trace", "-o", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::ifstream in(file);
  json doc = json::parse(in);
  bool low_util = false;
  for (const auto& e : doc["traceEvents"]) low_util |= e["name"] == "low_gpu_utilization";
  EXPECT_TRUE(low_util);
}

TEST_F(Commands, AnalyzeErrors) {
  auto missing = call(run_analyze_command, {dir.file("missing.db")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err.rfind("error: ", 0), 0u) << missing.err;
  EXPECT_EQ(call(run_analyze_command, {db, "--rules", "nope"}).code, 2);
  EXPECT_EQ(call(run_analyze_command, {db, "--format", "xml"}).code, 2);
  EXPECT_EQ(call(run_analyze_command, {db, "--set", "garbage"}).code, 2);
  EXPECT_EQ(call(run_analyze_command, {db, "--capture", "99"}).code, 1);
  EXPECT_EQ(call(run_analyze_command, {}).code, 2);
  auto help = call(run_analyze_command, {"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: fleetscope analyze"), std::string::npos);
  auto rules = call(run_analyze_command, {"--list-rules"});
  EXPECT_EQ(rules.code, 0);
  EXPECT_NE(rules.out.find("gpu_idle_gaps.min_gap_ns = 5e+08"), std::string::npos);
}

// A second user analyses a database they may read but not write (another user's file): the
// findings are printed with a note saying why they were not stored, exit 0, the file unchanged.
// (It used to print nothing and fail on SQLite's "attempt to write a readonly database".) The
// command runs in a child process that, when the test runs as root (who may write any file),
// drops to uid/gid 65534 first.
TEST_F(Commands, AnalyzeADatabaseThisUserMayNotWritePrintsItsFindings) {
  namespace fs = std::filesystem;
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    const Result r = call(run_analyze_command, {db});
    const std::string text = std::to_string(r.code) + "\n" + r.err + '\x1f' + r.out;
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) ::_exit(4);
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  const size_t code_end = text.find('\n'), err_end = text.find('\x1f');
  ASSERT_NE(err_end, std::string::npos) << text;
  const std::string code = text.substr(0, code_end);
  const std::string err = text.substr(code_end + 1, err_end - code_end - 1);
  const std::string out = text.substr(err_end + 1);
  EXPECT_EQ(code, "0") << err;
  EXPECT_NE(out.find("launch_delay_outliers"), std::string::npos) << out;
  EXPECT_NE(err.find("analyze: findings not stored: cannot write " + db + ": "), std::string::npos)
      << err;
  EXPECT_EQ(err.find("error:"), std::string::npos) << err;
  fs::permissions(db, fs::perms::owner_write, fs::perm_options::add);
  store::Reader reader(db);
  EXPECT_TRUE(reader.findings(ids.capture).empty());
}

TEST_F(Commands, ReportShowsStoredFindings) {
  ASSERT_EQ(call(run_analyze_command, {db}).code, 0);
  auto r = call(run_report_command, {db, "--format", "markdown"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("## launch_delay_outliers"), std::string::npos);
  auto none = call(run_report_command, {db, "--format", "json", "--capture", "1"});
  EXPECT_EQ(none.code, 0);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(Commands, ReportHtmlIsOneSelfContainedFile) {
  const std::string file = dir.file("report.html");
  auto r = call(run_report_command, {db, "-o", file});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("report: analysing capture"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("report: writing " + file), std::string::npos) << r.err;
  const std::string html = slurp(file);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("GPU 0 kernel utilization"), std::string::npos);
  EXPECT_NE(html.find("launch_delay_outliers"), std::string::npos);
  EXPECT_NE(html.find("Step time breakdown"), std::string::npos);  // the fixture has 2 steps
  EXPECT_NE(html.find("Persistent P"), std::string::npos);         // and memory events
  EXPECT_FALSE(std::filesystem::exists(dir.file("report_files")));
  // The report analyses afresh: nothing is stored.
  store::Reader reader(db);
  EXPECT_TRUE(reader.findings(ids.capture).empty());
  // html on stdout is fine too; --rules/--set select and tune rules as for analyze.
  auto stdout_html = call(run_report_command, {db, "--format", "html", "--rules", "pageable_memcpy",
                                               "--set", "pageable_memcpy.min_count=1"});
  ASSERT_EQ(stdout_html.code, 0) << stdout_html.err;
  EXPECT_NE(stdout_html.out.find("pageable_memcpy ("), std::string::npos);
  EXPECT_EQ(stdout_html.out.find("launch_delay_outliers"), std::string::npos);
}

TEST_F(Commands, ReportMarkdownWritesSidecarCharts) {
  const std::string file = dir.file("report.md");
  auto r = call(run_report_command, {db, "-o", file});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp(file);
  EXPECT_NE(md.find("## launch_delay_outliers ("), std::string::npos);
  for (const std::string chart : {"gpu0-utilization.svg", "steps.svg"}) {
    EXPECT_NE(md.find("](report_files/" + chart + ")"), std::string::npos) << chart;
    const std::string svg = slurp(dir.file("report_files/" + chart));
    EXPECT_EQ(svg.rfind("<svg ", 0), 0u) << chart;
  }
  // No temporary files are left.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.file("")))
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  // Markdown on stdout: the document without charts, and a note on stderr.
  auto out = call(run_report_command, {db, "--format", "md"});
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_NE(out.out.find("# fleetscope report"), std::string::npos);
  EXPECT_EQ(out.out.find(".svg"), std::string::npos);
  EXPECT_NE(out.err.find("charts omitted"), std::string::npos);
}

TEST_F(Commands, ReportErrors) {
  auto ext = call(run_report_command, {db, "-o", dir.file("report.pdf")});
  EXPECT_EQ(ext.code, 2);
  EXPECT_NE(ext.err.find("error: cannot tell the report format"), std::string::npos) << ext.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("report.pdf")));
  EXPECT_EQ(call(run_report_command, {db, "--format", "xml"}).code, 2);
  // Every format analyses now: --rules applies to json as to html.
  EXPECT_EQ(call(run_report_command, {db, "--format", "json", "--rules", "gpu_idle_gaps"}).code, 0);
  EXPECT_EQ(call(run_report_command, {db, "--format", "html", "--rules", "nope"}).code, 2);
  EXPECT_EQ(call(run_report_command, {db, "--format", "html", "--set", "garbage"}).code, 2);
  auto missing_db = call(run_report_command, {dir.file("missing.db"), "-o", dir.file("r.html")});
  EXPECT_EQ(missing_db.code, 1);
  EXPECT_NE(missing_db.err.find("error: cannot read " + dir.file("missing.db") + ": no such file"),
            std::string::npos)
      << missing_db.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.html")));
  // An unwritable output: error, exit 1, nothing left behind.
  for (const std::string name : {"no/such/dir/r.html", "no/such/dir/r.md"}) {
    auto r = call(run_report_command, {db, "-o", dir.file(name)});
    EXPECT_EQ(r.code, 1) << name;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;  // checked before the analysis
    EXPECT_FALSE(std::filesystem::exists(dir.file("no"))) << name;
  }
  // The sidecar directory's name is taken by a file: exit 1, no report.
  std::ofstream(dir.file("taken_files")) << "x";
  auto taken = call(run_report_command, {db, "-o", dir.file("taken.md")});
  EXPECT_EQ(taken.code, 1);
  EXPECT_NE(taken.err.find("not a directory"), std::string::npos) << taken.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("taken.md")));
  auto help = call(run_report_command, {"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("html|markdown|table|json|chrome-trace"), std::string::npos);
}

// Job ids are made in one place, AnalysisSession::job_profile, for `share plan DB`, `candidates
// --format profiles` and the GUI (issue 23: the GUI named jobs by file name, `share plan` by the
// full path). The id names the file, whatever path opened it; only two files of one name are
// told apart by the paths as given.
TEST_F(Commands, JobIdsNameTheFileWhateverPathOpenedIt) {
  auto profile_ids = [](const std::string& path) {
    auto r =
        call(run_candidates_command, {path, "--format", "profiles", "--max-utilization", "0.9"});
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<std::string> out;
    for (const json& job : json::parse(r.out)) out.push_back(job.at("job_id"));
    return out;
  };
  const std::string expected = "resnet-train@t.db#capture" + std::to_string(ids.capture) + "/gpu0";
  const std::string absolute = std::filesystem::absolute(db).string();
  EXPECT_EQ(profile_ids(absolute), std::vector<std::string>{expected});
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const auto relative = profile_ids("t.db");
  const auto dotted = profile_ids("./t.db");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(relative, std::vector<std::string>{expected});
  EXPECT_EQ(dotted, std::vector<std::string>{expected});

  // The session the GUI and `share plan` plan with: the same ids, from the same candidates.
  const sharer::MemoryModel memory;
  AnalysisSession one;
  one.open(absolute);
  const auto loaded = one.loaded(CaptureKey{0, ids.capture});
  ASSERT_EQ(loaded->candidates.size(), 1u);
  const ConsolidationCandidate& c = loaded->candidates[0];
  EXPECT_EQ(one.job_profile(c, 0, memory).job_id, expected);

  // Two files called t.db: the paths as given keep their jobs apart.
  std::filesystem::create_directories(dir.file("other"));
  const std::string twin = dir.file("other/t.db");
  std::filesystem::copy_file(db, twin);
  AnalysisSession two;
  two.open(db);
  two.open(twin);
  EXPECT_EQ(two.job_profile(c, 0, memory).job_id,
            "resnet-train@" + db + "#capture" + std::to_string(ids.capture) + "/gpu0");
  EXPECT_EQ(two.job_profile(c, 1, memory).job_id,
            "resnet-train@" + twin + "#capture" + std::to_string(ids.capture) + "/gpu0");
}

TEST_F(Commands, FleetDiffCandidates) {
  auto fleet = call(run_fleet_command, {db, "--format", "json"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  json ranking = json::parse(fleet.out);
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0]["workflow"], "resnet-train");
  EXPECT_EQ(ranking[0]["idle_ns"], 120'000);

  auto diff = call(run_diff_command, {db, db, "--format", "json"});
  ASSERT_EQ(diff.code, 0) << diff.err;
  json d = json::parse(diff.out);
  for (const auto& m : d["metrics"]) EXPECT_EQ(m["delta"], 0.0) << m["metric"];

  auto cand = call(run_candidates_command, {db, "--format", "json", "--max-utilization", "0.9"});
  ASSERT_EQ(cand.code, 0) << cand.err;
  json c = json::parse(cand.out);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["persistent_bytes"], int64_t{1} << 30);
  EXPECT_EQ(c[0]["candidate"], true);
  auto table = call(run_candidates_command, {db});
  EXPECT_NE(table.out.find("resnet-train"), std::string::npos);
  // A utilization that is no fraction is a usage error (nan and 2 were taken, with exit 0).
  for (const std::string bad : {"nan", "2", "-0.1", "inf"}) {
    auto refused = call(run_candidates_command, {db, "--max-utilization", bad});
    EXPECT_EQ(refused.code, 2) << bad;
    EXPECT_NE(refused.err.find("--max-utilization expects a fraction from 0 to 1"),
              std::string::npos)
        << refused.err;
  }
  EXPECT_EQ(call(run_fleet_command, {}).code, 2);
  EXPECT_EQ(call(run_diff_command, {db}).code, 2);
}

// A workflow name is whatever the file says (here one with a comma and quotes, as a trace file
// name gives it): the CSV ranking quotes it (RFC 4180) and keeps 15 columns. It used to print
// the name raw, so the row had one field too many and every column after it was shifted.
TEST(FleetCsv, NamesFromTheFileAreQuoted) {
  testing::TempDir dir;
  const std::string db = dir.file("t.db");
  testing::write_shared_case(db, "run,7 \"final\"");
  auto fleet = call(run_fleet_command, {db, "--format", "csv"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  std::istringstream lines(fleet.out);
  std::string header, row;
  ASSERT_TRUE(std::getline(lines, header));
  ASSERT_TRUE(std::getline(lines, row));
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), 14) << header;
  EXPECT_EQ(row.rfind("\"run,7 \"\"final\"\"\",alice,1,", 0), 0u) << row;
  // Outside the quoted name, 14 separators as in the header.
  const std::string rest = row.substr(row.find("\",") + 1);
  EXPECT_EQ(std::count(rest.begin(), rest.end(), ','), 14) << row;
}

// Inputs without GPU work (a CPU-only rank) leave nothing to rank: said on stderr, exit 0, rather
// than an empty table and nothing else.
TEST(FleetNoGpu, SaysThereIsNothingToRank) {
  const std::string cpu_only =
      std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/hta-cpu_only_rank-34.json.gz";
  auto fleet = call(run_fleet_command, {cpu_only});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  EXPECT_NE(fleet.err.find("fleet: no GPU activity (kernels, copies, memsets) in any capture of "
                           "the 1 input(s): nothing to rank"),
            std::string::npos)
      << fleet.err;
}

// The AMD/ROCm reference trace recorded two ProfilerSteps: #1 of 9.29 ms and #2 of 49 us, the
// step the profiler stopped in, cut short by the capture's end. A step is what HTA counts
// (HtaStepFilter::counts_step: not the last ProfilerStep), so `analyze`, `candidates` and `fleet`
// all see one step of 9.29 ms; `candidates` used to report the median of both, 49.1 us.
TEST(Steps, TheLastProfilerStepCutByTheCaptureEndIsNotAStep) {
  const std::string amd = std::string(FLEETSCOPE_SHARED_DATA) +
                          "/traces/kineto/hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz";
  ASSERT_TRUE(std::filesystem::exists(amd)) << "reference trace missing: " << amd;
  constexpr int64_t kStepOne = 9'288'291;  // ProfilerStep#1: "dur": 9288.291 (us)

  auto analyze = call(run_analyze_command, {amd, "--format", "json"});
  ASSERT_EQ(analyze.code, 0) << analyze.err;
  const json step_time = json::parse(analyze.out).at("metrics").at("step_time");
  EXPECT_EQ(step_time.at("count"), 1) << step_time.dump();
  EXPECT_EQ(step_time.at("p50_ns"), kStepOne) << step_time.dump();
  EXPECT_EQ(step_time.at("max_ns"), kStepOne) << step_time.dump();

  auto candidates = call(run_candidates_command, {amd, "--format", "json"});
  ASSERT_EQ(candidates.code, 0) << candidates.err;
  const json jobs = json::parse(candidates.out);
  ASSERT_FALSE(jobs.empty()) << candidates.out;
  for (const json& job : jobs) {
    EXPECT_EQ(job.at("iterations"), 1) << job.dump();
    EXPECT_EQ(job.at("iteration_ns"), kStepOne) << job.dump();
  }

  auto fleet = call(run_fleet_command, {amd, "--format", "json"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  const json ranking = json::parse(fleet.out);
  ASSERT_EQ(ranking.size(), 1u) << fleet.out;
  EXPECT_EQ(ranking[0].at("steps"), 1) << fleet.out;
  EXPECT_EQ(ranking[0].at("step_p50_ns"), kStepOne) << fleet.out;
  EXPECT_EQ(ranking[0].at("step_p99_ns"), kStepOne) << fleet.out;
}

// A CPU-only capture among GPU ones (the shared case's database and HTA's CPU-only rank) holds
// no GPU time, so it is not ranked; it used to vanish from the output without a word. Every
// format lists it after the ranking, --top does not cut it, and stderr names it.
TEST(FleetNoGpu, ACpuOnlyCaptureInMixedInputIsListedInEveryFormat) {
  const std::string cpu_only =
      std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/hta-cpu_only_rank-34.json.gz";
  ASSERT_TRUE(std::filesystem::exists(cpu_only)) << "reference trace missing: " << cpu_only;
  testing::TempDir dir;
  const std::string db = dir.file("gpu.db");
  testing::write_shared_case(db);

  auto json_run = call(run_fleet_command, {db, cpu_only, "--format", "json", "--top", "1"});
  ASSERT_EQ(json_run.code, 0) << json_run.err;
  const json rows = json::parse(json_run.out);
  ASSERT_EQ(rows.size(), 2u) << json_run.out;
  EXPECT_EQ(rows[0]["gpu_activity"], true) << rows[0].dump();
  EXPECT_GT(rows[0]["gpu_hours"].get<double>(), 0.0);
  const json& cpu = rows[1];
  EXPECT_EQ(cpu["gpu_activity"], false) << cpu.dump();
  EXPECT_EQ(cpu["source"], cpu_only);
  EXPECT_EQ(cpu["capture"], 1);
  EXPECT_EQ(cpu["devices"], 0);
  EXPECT_EQ(cpu["gpu_hours"], 0.0);
  EXPECT_TRUE(cpu["utilization"].is_null());
  const std::string job = cpu["workflow"];
  EXPECT_FALSE(job.empty());
  const std::string note = "fleet: " + cpu_only + ": capture 1 (" + job +
                           "): no GPU activity (kernels, copies, memsets): listed with 0 "
                           "GPU-hours, not ranked";
  EXPECT_NE(json_run.err.find(note), std::string::npos) << json_run.err;
  EXPECT_EQ(json_run.err.find("nothing to rank"), std::string::npos) << json_run.err;

  auto csv_run = call(run_fleet_command, {db, cpu_only, "--format", "csv"});
  ASSERT_EQ(csv_run.code, 0) << csv_run.err;
  std::istringstream lines(csv_run.out);
  std::string header, ranked, listed, extra;
  ASSERT_TRUE(std::getline(lines, header));
  ASSERT_TRUE(std::getline(lines, ranked));
  ASSERT_TRUE(std::getline(lines, listed));
  EXPECT_FALSE(std::getline(lines, extra)) << csv_run.out;
  EXPECT_EQ(header.rfind("workflow,user,captures,devices,gpu_activity,gpu_hours,", 0), 0u);
  EXPECT_NE(ranked.find(",true,"), std::string::npos) << ranked;
  const std::string user = cpu["user"];
  EXPECT_EQ(listed,
            common::csv_field(job) + "," + common::csv_field(user) + ",1,0,false,0,0,,,,,,,0,")
      << csv_run.out;
  EXPECT_EQ(std::count(listed.begin(), listed.end(), ','),
            std::count(header.begin(), header.end(), ','));
  EXPECT_NE(csv_run.err.find(note), std::string::npos) << csv_run.err;

  auto table_run = call(run_fleet_command, {db, cpu_only});
  ASSERT_EQ(table_run.code, 0) << table_run.err;
  const auto section = table_run.out.find("\nNO GPU ACTIVITY (not ranked: 0 GPU-hours)\n");
  ASSERT_NE(section, std::string::npos) << table_run.out;
  EXPECT_NE(table_run.out.find(cpu_only + " capture 1", section), std::string::npos)
      << table_run.out;
  EXPECT_NE(table_run.err.find(note), std::string::npos) << table_run.err;
}

// Process identity is per capture (issue 23): 40 Kineto traces that all say pid 100 / device 0,
// imported into one database, stay 40 processes of 40 workflows, and `fleet` ranks 40 jobs, each
// named after its own file (schema 2 kept one process row per pid: 2 jobs x "20 captures").
TEST(FleetIdentity, FortyImportedCapturesAreFortyJobs) {
  testing::TempDir dir;
  std::vector<std::string> files;
  for (int i = 0; i < 40; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "job%02d.json", i);
    const std::string path = dir.file(name);
    // Two kernels with a gap that grows with i, so every job has its own idle time.
    std::ofstream(path) << R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
       "args": {"device": 0, "stream": 7, "correlation": 1}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )"
                        << 20 + i
                        << R"(, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 200,
       "ts": 9, "dur": 1, "args": {"correlation": 1}},
      {"name": "process_name", "ph": "M", "ts": 8, "pid": 100, "tid": 0, "args": {"name": "train.py"}}
    ], "baseTimeNanoseconds": 1700000000000000000})";
    files.push_back(path);
  }
  const std::string db = dir.file("fleet.db");
  importers::ImportOptions options;
  options.parallel_files = 4;
  importers::import_files(files, db, options);

  store::Reader reader(db);
  ASSERT_EQ(reader.captures().size(), 40u);
  ASSERT_EQ(reader.workflows().size(), 40u);
  const auto processes = reader.processes();
  ASSERT_EQ(processes.size(), 40u);  // (capture, pid 100) each, not one pid 100
  for (const auto& capture : reader.captures()) {
    const auto own = reader.processes(capture.id);
    ASSERT_EQ(own.size(), 1u) << capture.id;
    EXPECT_EQ(own[0].captureId, capture.id);
    EXPECT_EQ(own[0].pid, 100);
    const auto workflows = reader.workflows();
    const auto w = std::find_if(workflows.begin(), workflows.end(),
                                [&](const auto& x) { return x.id == own[0].workflow_id; });
    ASSERT_NE(w, workflows.end());
    EXPECT_EQ(dir.file(w->name + ".json"), capture.source_path) << "workflow of its own file";
  }

  auto fleet = call(run_fleet_command, {db, "--format", "json", "--top", "100"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  const json ranking = json::parse(fleet.out);
  ASSERT_EQ(ranking.size(), 40u) << fleet.out;
  std::set<std::string> names;
  for (const json& job : ranking) {
    EXPECT_EQ(job["captures"], 1) << job.dump();
    const std::string name = job["workflow"];
    names.insert(name);
    // jobNN's gap is 5 + NN us: idle time is its own, not a neighbour's.
    const int n = std::stoi(name.substr(3));
    EXPECT_EQ(job["idle_ns"], int64_t{5 + n} * 1000) << name;
  }
  EXPECT_EQ(names.size(), 40u);
  EXPECT_EQ(*names.begin(), "job00");
  EXPECT_EQ(*names.rbegin(), "job39");
}

// The issue's own case with real traces (issue 23): 40 PyTorch-profiler traces imported into one
// database, each of six real HTA traces copied under several job names, so every pid and device
// repeats across captures (up to 7 captures of each trace's pids). The database keeps 40 jobs of
// one capture each, every process in its own capture's job, and `fleet` ranks 40 jobs, each named
// after its file and with its own trace's figures (not a neighbour's with the same pid).
TEST(FleetIdentity, FortyRealTracesWithRepeatedPidsAreFortyJobsWithTheirOwnFigures) {
  const std::string kineto = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/";
  const std::vector<std::string> sources = {
      "hta-critical_path_alexnet_trace.json.gz",
      "hta-critical_path_simple_add_trace.json.gz",
      "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz",
      "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
      "hta-triton_example_triton_example.json.gz",
      "hta-trace_filter_sampled_rank-1.json.gz"};
  testing::TempDir dir;
  // Each source alone: its own ranking entry, the figures every copy must show.
  std::vector<json> alone;
  for (const auto& source : sources) {
    ASSERT_TRUE(std::filesystem::exists(kineto + source)) << kineto + source;
    const std::string db = dir.file(source + ".db");
    importers::import_files({kineto + source}, db, {});
    auto fleet = call(run_fleet_command, {db, "--format", "json"});
    ASSERT_EQ(fleet.code, 0) << fleet.err;
    const json ranking = json::parse(fleet.out);
    ASSERT_EQ(ranking.size(), 1u) << source << ": " << fleet.out;
    ASSERT_EQ(ranking[0]["gpu_activity"], true) << source;
    alone.push_back(ranking[0]);
  }
  std::vector<std::string> files;
  for (size_t i = 0; i < 40; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "job%02zu.json.gz", i);
    files.push_back(dir.file(name));
    std::filesystem::copy_file(kineto + sources[i % sources.size()], files.back());
  }
  const std::string db = dir.file("fleet.db");
  importers::ImportOptions options;
  options.parallel_files = 4;
  importers::import_files(files, db, options);

  store::Reader reader(db);
  ASSERT_EQ(reader.captures().size(), 40u);
  ASSERT_EQ(reader.workflows().size(), 40u);
  const auto workflows = reader.workflows();
  size_t processes = 0;
  std::set<int64_t> pids;
  for (const auto& capture : reader.captures()) {
    const auto own = reader.processes(capture.id);
    ASSERT_FALSE(own.empty()) << capture.source_path;
    for (const auto& p : own) {
      EXPECT_EQ(p.captureId, capture.id);
      pids.insert(p.globalPid);
      const auto w = std::find_if(workflows.begin(), workflows.end(),
                                  [&](const auto& x) { return x.id == p.workflow_id; });
      ASSERT_NE(w, workflows.end());
      EXPECT_EQ(dir.file(w->name + ".json.gz"), capture.source_path) << "job of its own file";
    }
    processes += own.size();
  }
  EXPECT_EQ(reader.processes().size(), processes) << "no process row shared by captures";
  EXPECT_LT(pids.size(), processes) << "the pids repeat across captures (the case under test)";

  auto fleet = call(run_fleet_command, {db, "--format", "json", "--top", "100"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  const json ranking = json::parse(fleet.out);
  ASSERT_EQ(ranking.size(), 40u) << fleet.out;
  std::set<std::string> names;
  for (const json& job : ranking) {
    const std::string name = job["workflow"];
    names.insert(name);
    EXPECT_EQ(job["captures"], 1) << job.dump();
    const json& own = alone[std::stoul(name.substr(3)) % sources.size()];
    for (const char* figure : {"span_ns", "idle_ns", "devices", "steps", "gpu_activity"})
      EXPECT_EQ(job[figure], own[figure]) << name << " " << figure;
  }
  EXPECT_EQ(names.size(), 40u);
  EXPECT_EQ(*names.begin(), "job00");
  EXPECT_EQ(*names.rbegin(), "job39");
}

// The same 40 captures in a file written by schema 2 (its DDL: migrations/v1.sql and
// v1_to_v2.sql), as the schema-2 import left them: 40 workflows, but one process row for pid 100
// (the last file's workflow). Opening it migrates to the current schema, and the v2 -> v3 step
// repairs the attribution from the rows: each capture's pid 100 gets its own process row of its
// own workflow, so `fleet` ranks 40 jobs, each named after its own file.
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FleetIdentity, ASchemaTwoFileOfFortyCapturesIsRepairedToFortyJobs) {
  testing::TempDir dir;
  const std::string db = dir.file("v2.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    std::string sql = store::schema_v1_sql() +
                      read_text(FLEETSCOPE_MIGRATIONS_DIR "/v1_to_v2.sql") +
                      "INSERT INTO meta VALUES ('schema_version', '2');"
                      "INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel');";
    const int64_t pid = 100, global_pid = store::global_pid(pid);
    const int64_t tid = store::global_tid(pid, 200);
    for (int i = 0; i < 40; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "job%02d", i);
      const std::string id = std::to_string(i + 1);
      const int64_t base = 1'700'000'000'000'000'000 + int64_t{i} * 1'000'000'000;
      // Two kernels with a gap of 5 + i us (each job's own idle time) and the launch call.
      sql += "INSERT INTO captures(id, kind, source, source_path, start_ns, end_ns) VALUES (" + id +
             ", 'imported', 'kineto-json', '" + dir.file(std::string(name) + ".json") + "', " +
             std::to_string(base) + ", " + std::to_string(base + 30'000 + i * 1000) + ");";
      sql +=
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, "
          "correlationId, globalPid, demangledName, shortName, captureId) VALUES (" +
          std::to_string(base + 10'000) + ", " + std::to_string(base + 15'000) + ", 0, 7, 1, " +
          std::to_string(global_pid) + ", 1, 1, " + id + "), (" +
          std::to_string(base + 20'000 + i * 1000) + ", " +
          std::to_string(base + 25'000 + i * 1000) + ", 0, 7, 2, " + std::to_string(global_pid) +
          ", 1, 1, " + id + ");";
      sql +=
          "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, "
          "correlationId, nameId, captureId) VALUES (" +
          std::to_string(base + 9'000) + ", " + std::to_string(base + 10'000) + ", 0, " +
          std::to_string(tid) + ", 1, 2, " + id + ");";
      sql += "INSERT INTO workflows(id, name) VALUES (" + id + ", '" + name + "');";
      // Schema 2's upsert by pid: the row ends up the last capture's.
      sql +=
          "INSERT OR REPLACE INTO processes(globalPid, pid, workflow_id, rank, command) "
          "VALUES (" +
          std::to_string(global_pid) + ", 100, " + id + ", 0, 'train.py');";
    }
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }

  store::Reader reader(db);  // migrates a private copy (the file is left as it is)
  ASSERT_EQ(reader.captures().size(), 40u);
  EXPECT_EQ(reader.processes().size(), 40u) << "one pid-100 row per capture, none file-wide";
  const auto workflows = reader.workflows();
  for (const auto& capture : reader.captures()) {
    const auto own = reader.processes(capture.id);
    ASSERT_EQ(own.size(), 1u) << capture.id;
    EXPECT_EQ(own[0].captureId, capture.id);
    EXPECT_EQ(own[0].pid, 100);
    EXPECT_EQ(own[0].command, "train.py");
    // Rank was the last file's: kept for it alone.
    EXPECT_EQ(own[0].rank.has_value(), capture.id == 40) << capture.id;
    const auto w = std::find_if(workflows.begin(), workflows.end(),
                                [&](const auto& x) { return x.id == own[0].workflow_id; });
    ASSERT_NE(w, workflows.end());
    EXPECT_EQ(dir.file(w->name + ".json"), capture.source_path) << "workflow of its own file";
  }

  auto fleet = call(run_fleet_command, {db, "--format", "json", "--top", "100"});
  ASSERT_EQ(fleet.code, 0) << fleet.err;
  const json ranking = json::parse(fleet.out);
  ASSERT_EQ(ranking.size(), 40u) << fleet.out;
  std::set<std::string> names;
  for (const json& job : ranking) {
    EXPECT_EQ(job["captures"], 1) << job.dump();
    const std::string name = job["workflow"];
    names.insert(name);
    const int n = std::stoi(name.substr(3));
    EXPECT_EQ(job["idle_ns"], int64_t{5 + n} * 1000) << name;
  }
  EXPECT_EQ(names.size(), 40u);

  // Opened for writing, the file itself is migrated the same way.
  { const store::Database migrated = store::Database::open(db, store::OpenMode::read_write); }
  EXPECT_EQ(store::Reader(db).processes().size(), 40u);
}

// A file of another shape keeps its file-wide rows: here two captures but one workflow (a
// daemon's windows of one job), so nothing says which capture had which job.
TEST(FleetIdentity, ASchemaTwoFileWithoutOneWorkflowPerCaptureKeepsItsFileWideRows) {
  testing::TempDir dir;
  const std::string db = dir.file("v2.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    const std::string gp = std::to_string(store::global_pid(100));
    const std::string sql =
        store::schema_v1_sql() + read_text(FLEETSCOPE_MIGRATIONS_DIR "/v1_to_v2.sql") +
        "INSERT INTO meta VALUES ('schema_version', '2');"
        "INSERT INTO StringIds VALUES (1, 'k');"
        "INSERT INTO captures(id, kind, source) VALUES (1, 'on_demand', 'fleetscope-agent'), "
        "(2, 'on_demand', 'fleetscope-agent');"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, "
        "demangledName, shortName, captureId) VALUES (10, 20, 0, 7, " +
        gp + ", 1, 1, 1), (30, 40, 0, 7, " + gp +
        ", 1, 1, 2);"
        "INSERT INTO workflows(id, name) VALUES (1, 'serving');"
        "INSERT INTO processes(globalPid, pid, workflow_id) VALUES (" +
        gp + ", 100, 1);";
    ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(raw);
    sqlite3_close(raw);
  }
  store::Reader reader(db);
  ASSERT_EQ(reader.processes().size(), 1u);
  EXPECT_FALSE(reader.processes()[0].captureId.has_value());
  for (int64_t capture : {1, 2}) EXPECT_EQ(reader.processes(capture).at(0).workflow_id, 1);
}

// A schema-5 file of two imported captures (job0.json, job1.json) whose kernels and launch calls
// all say pid 100, with one workflow per capture. `damaged`: the process rows as the v2 -> v3 step
// left them before it split them (one file-wide row, captureId NULL, of the last file's workflow),
// kept through v3..v5; otherwise one row per capture, as schema 3 and later write them. `third`:
// a later import appended job2.json with its own process row.
std::string write_schema_five_file(const testing::TempDir& dir, bool damaged, bool third = false) {
  const std::string db = dir.file(damaged ? "damaged.db" : "healthy.db");
  // Schema 6 changed no table, so today's DDL is schema 5's.
  store::Database file = store::Database::create(db);
  const int64_t global_pid = store::global_pid(100);
  const int64_t tid = store::global_tid(100, 200);
  std::string sql =
      "UPDATE meta SET value = '5' WHERE key = 'schema_version';"
      "INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel');";
  const int captures = third ? 3 : 2;
  for (int i = 0; i < captures; ++i) {
    const std::string id = std::to_string(i + 1), name = "job" + std::to_string(i);
    const int64_t base = 1'700'000'000'000'000'000 + int64_t{i} * 1'000'000'000;
    const int64_t gap = 5'000 + int64_t{i} * 1'000;  // each job's own idle time
    sql += "INSERT INTO captures(id, kind, source, source_path, start_ns, end_ns) VALUES (" + id +
           ", 'imported', 'kineto-json', '" + dir.file(name + ".json") + "', " +
           std::to_string(base) + ", " + std::to_string(base + 30'000 + gap) + ");";
    sql +=
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, "
        "globalPid, demangledName, shortName, captureId) VALUES (" +
        std::to_string(base + 10'000) + ", " + std::to_string(base + 15'000) + ", 0, 7, 1, " +
        std::to_string(global_pid) + ", 1, 1, " + id + "), (" +
        std::to_string(base + 15'000 + gap) + ", " + std::to_string(base + 20'000 + gap) +
        ", 0, 7, 2, " + std::to_string(global_pid) + ", 1, 1, " + id + ");";
    sql +=
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, "
        "correlationId, nameId, captureId) VALUES (" +
        std::to_string(base + 9'000) + ", " + std::to_string(base + 10'000) + ", 0, " +
        std::to_string(tid) + ", 1, 2, " + id + ");";
    sql += "INSERT INTO workflows(id, name) VALUES (" + id + ", '" + name + "');";
    if (!damaged || i == 2)
      sql +=
          "INSERT INTO processes(captureId, globalPid, pid, workflow_id, rank, command) VALUES (" +
          id + ", " + std::to_string(global_pid) + ", 100, " + id + ", 0, 'train.py');";
  }
  if (damaged)
    sql +=
        "INSERT INTO processes(captureId, globalPid, pid, workflow_id, rank, command) VALUES "
        "(NULL, " +
        std::to_string(global_pid) + ", 100, 2, 0, 'train.py');";
  file.exec(sql);
  return db;
}

// The fleet ranking of `db` as (workflow, idle ns) per job.
std::vector<std::pair<std::string, int64_t>> fleet_jobs(const std::string& db) {
  auto fleet = call(run_fleet_command, {db, "--format", "json", "--top", "100"});
  EXPECT_EQ(fleet.code, 0) << fleet.err;
  std::vector<std::pair<std::string, int64_t>> jobs;
  for (const json& job : json::parse(fleet.out)) {
    EXPECT_EQ(job["captures"], 1) << job.dump();
    jobs.emplace_back(job["workflow"], job["idle_ns"]);
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

// Files the v2 -> v3 step migrated before it split process rows stayed damaged through v5: both
// captures' pid 100 was one row of job1's workflow, so `fleet` ranked one job "job1" of 2
// captures. The v5 -> v6 step runs the same repair: the read path's in-memory migration and
// `fleetscope migrate` (the file opened for writing) both give two jobs with their own names.
TEST(FleetIdentity, ASchemaFiveFileDamagedByTheOldMigrationIsRepairedToItsJobs) {
  testing::TempDir dir;
  const std::string db = write_schema_five_file(dir, /*damaged=*/true);
  const std::vector<std::pair<std::string, int64_t>> expected = {{"job0", 5'000}, {"job1", 6'000}};
  EXPECT_EQ(fleet_jobs(db), expected) << "read path: migrated in memory";
  store::Reader reader(db);
  EXPECT_EQ(reader.schema_version(), store::kSchemaVersion);
  ASSERT_EQ(reader.processes().size(), 2u) << "one pid-100 row per capture, none file-wide";
  for (const auto& capture : reader.captures()) {
    const auto own = reader.processes(capture.id);
    ASSERT_EQ(own.size(), 1u) << capture.id;
    EXPECT_EQ(own[0].captureId, capture.id);
    EXPECT_EQ(own[0].workflow_id, capture.id) << "its own file's workflow";
    EXPECT_EQ(own[0].command, "train.py");
  }
  EXPECT_EQ(store::Database::open_external(db).schema_version(), 5) << "a read leaves the file";

  { const store::Database migrated = store::Database::open(db, store::OpenMode::read_write); }
  EXPECT_EQ(store::Database::open_external(db).schema_version(), store::kSchemaVersion);
  EXPECT_EQ(store::Reader(db).processes().size(), 2u);
  EXPECT_EQ(fleet_jobs(db), expected) << "the file itself migrated";
}

// A damaged file to which a later import appended a capture with its own process row: the repair
// splits the file-wide row for the two old captures and keeps the third's row as it is (a second
// row of the same (capture, pid) would break the table's key and the whole migration).
TEST(FleetIdentity, TheRepairKeepsTheRowsOfCapturesThatHaveTheirOwn) {
  testing::TempDir dir;
  const std::string db = write_schema_five_file(dir, /*damaged=*/true, /*third=*/true);
  const std::vector<std::pair<std::string, int64_t>> expected = {
      {"job0", 5'000}, {"job1", 6'000}, {"job2", 7'000}};
  EXPECT_EQ(fleet_jobs(db), expected);
  store::Reader reader(db);
  ASSERT_EQ(reader.processes().size(), 3u);
  EXPECT_EQ(reader.processes(3).at(0).rank, 0) << "capture 3's own row, unchanged";
  EXPECT_FALSE(reader.processes(1).at(0).rank.has_value()) << "split from the last file's row";
}

// A healthy schema-5 file (one row per capture) comes out of the v5 -> v6 step unchanged.
TEST(FleetIdentity, AHealthySchemaFiveFileIsUnchangedByTheRepair) {
  testing::TempDir dir;
  const std::string db = write_schema_five_file(dir, /*damaged=*/false);
  const auto dump = [](const std::string& path) {
    std::vector<std::string> rows;
    for (const auto& p : store::Reader(path).processes())
      rows.push_back(std::to_string(p.captureId.value_or(-1)) + " " + std::to_string(p.pid) + " " +
                     std::to_string(p.workflow_id.value_or(-1)) + " " +
                     std::to_string(p.rank.value_or(-1)) + " " + p.command.value_or(""));
    return rows;
  };
  const std::vector<std::string> expected = {"1 100 1 0 train.py", "2 100 2 0 train.py"};
  EXPECT_EQ(dump(db), expected) << "migrated in memory";
  { const store::Database migrated = store::Database::open(db, store::OpenMode::read_write); }
  EXPECT_EQ(dump(db), expected) << "migrated in the file";
  EXPECT_EQ(fleet_jobs(db),
            (std::vector<std::pair<std::string, int64_t>>{{"job0", 5'000}, {"job1", 6'000}}));
}

// The JSON names the metrics per device (docs/analyzer.md "JSON metric names"); the identities
// between them hold.
TEST_F(Commands, AnalyzeJsonHasMetricsPerDeviceAndCapture) {
  auto r = call(run_analyze_command, {db, "--format", "json", "--no-store"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(r.out);
  const json& metrics = doc.at("metrics");
  ASSERT_TRUE(metrics.contains("capture"));
  ASSERT_TRUE(metrics.at("devices").contains("0")) << metrics.dump(1);
  const json& gpu = metrics.at("devices").at("0");
  EXPECT_GT(gpu.at("span_ns").get<int64_t>(), 0);
  EXPECT_EQ(gpu.at("gpu_idle_ns").get<int64_t>(),
            gpu.at("span_ns").get<int64_t>() - gpu.at("gpu_busy_all_ns").get<int64_t>());
  EXPECT_LE(gpu.at("gpu_busy_kernels_ns").get<int64_t>(), gpu.at("gpu_busy_all_ns").get<int64_t>());
  EXPECT_TRUE(gpu.contains("kernel_utilization_steps"));
  EXPECT_TRUE(metrics.contains("launches"));
  for (const json& f : doc.at("findings")) {
    EXPECT_TRUE(f.contains("windows")) << f.dump();
    EXPECT_TRUE(f.contains("impact_ns")) << f.dump();
  }
}

// `analyze TRACE.json` imports in memory: the same findings as importing first, and no file.
TEST(AnalyzeTraceFile, SameFindingsAsTheImportedDatabaseAndNoFileWritten) {
  const std::filesystem::path trace =
      std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/tb-gpu_metrics_input.json";
  ASSERT_TRUE(std::filesystem::exists(trace))
      << "reference trace missing: " << trace << " (tests/data/README.md)";
  testing::TempDir dir;
  const std::string copy = dir.file("trace.json");
  std::filesystem::copy_file(trace, copy);
  auto direct = call(run_analyze_command, {copy, "--format", "json"});
  ASSERT_EQ(direct.code, 0) << direct.err;
  EXPECT_NE(direct.err.find("in memory"), std::string::npos) << direct.err;
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"trace.json"}) << "nothing is written beside it";

  const std::string db = dir.file("imported.db");
  importers::import_files({copy}, db);
  auto imported = call(run_analyze_command, {db, "--format", "json", "--no-store"});
  ASSERT_EQ(imported.code, 0) << imported.err;
  const json a = json::parse(direct.out), b = json::parse(imported.out);
  ASSERT_FALSE(a.at("findings").empty());
  EXPECT_EQ(a.at("findings"), b.at("findings"));
  EXPECT_EQ(a.at("metrics").at("devices"), b.at("metrics").at("devices"));
  // A trace file is one capture, id 1; --capture takes it like a database's.
  EXPECT_EQ(call(run_analyze_command, {copy, "--capture", "1", "--format", "json"}).code, 0);
  EXPECT_EQ(call(run_analyze_command, {copy, "--capture", "2"}).code, 1);
  EXPECT_EQ(call(run_analyze_command, {copy, "--capture", "x"}).code, 2);
}

// The one rule for stored vs fresh findings (capture_findings(), analysis.h): `analyze`,
// `report`, `fleet` and the analysis session the GUI uses show the same findings for a capture
// whose rows are there — analysed now — whatever an earlier run left in the findings table; only
// a capture with no rows left shows its stored findings, and says so.
using RuleImpacts = std::vector<std::pair<std::string, int64_t>>;

RuleImpacts sorted(RuleImpacts v) {
  std::sort(v.begin(), v.end());
  return v;
}

RuleImpacts of_json(const json& doc) {
  RuleImpacts out;
  for (const auto& f : doc.at("findings"))
    out.emplace_back(f.at("rule").get<std::string>(), f.at("impact_ns").get<int64_t>());
  return sorted(out);
}

RuleImpacts of_rows(const std::vector<store::Finding>& findings) {
  RuleImpacts out;
  for (const auto& f : findings) out.emplace_back(f.rule, f.impact_ns);
  return sorted(out);
}

// Replaces the capture's stored findings with one the rules would never make on this capture.
store::Finding store_a_different_finding(const std::string& db, int64_t capture) {
  store::Finding f;
  f.rule = "dataloader_bottleneck", f.severity = "high", f.impact_ns = 5;
  f.recommendation = "stored by an earlier run", f.evidence_json = "{}";
  store::Writer writer(store::Database::open(db, store::OpenMode::read_write));
  std::vector<store::Finding> findings{f};
  store_findings(writer, capture, findings);
  writer.finish();
  return findings.front();
}

// What the analysis session (the GUI's) shows for the only capture of `db`.
AnalysisResult session_result(const std::string& db) {
  AnalysisSession session;
  session.open(db);
  const auto refs = session.captures();
  EXPECT_EQ(refs.size(), 1u);
  return session.analysis(refs.at(0).key)->result;
}

TEST_F(Commands, OneFindingsRuleStoredFindingsThatDifferFromAFreshAnalysisAreNotShown) {
  const RuleImpacts fresh =
      of_rows(analyze(load_capture(store::Reader(db), ids.capture)));  // the rules, run here
  ASSERT_FALSE(fresh.empty());
  const store::Finding stored = store_a_different_finding(db, ids.capture);
  ASSERT_NE(of_rows({stored}), fresh);  // the comparison below is not vacuous

  const Result report = call(run_report_command, {db, "--format", "json"});
  ASSERT_EQ(report.code, 0) << report.err;
  const json report_doc = json::parse(report.out);
  EXPECT_EQ(of_json(report_doc), fresh);
  EXPECT_EQ(report_doc.at("findings_source"), "analysed");

  const AnalysisResult session = session_result(db);
  EXPECT_EQ(session.source, FindingsSource::analysed);
  EXPECT_EQ(of_rows(session.findings), fresh);
  EXPECT_FALSE(session.rules.empty());  // analysed: every rule's outcome is there

  // fleet credits the same findings to the job: its top rule is the fresh analysis's.
  const auto ranking = rank_workflows({db});
  ASSERT_EQ(ranking.size(), 1u);
  int64_t total = 0;
  for (const auto& [rule, impact] : fresh) total += impact;
  EXPECT_EQ(ranking[0].findings_impact_ns, total);
  EXPECT_NE(ranking[0].top_rule, stored.rule);

  // `analyze` shows the same and replaces the stored record with it.
  const Result analyzed = call(run_analyze_command, {db, "--format", "json"});
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  const json analyze_doc = json::parse(analyzed.out);
  EXPECT_EQ(of_json(analyze_doc), fresh);
  EXPECT_EQ(analyze_doc.at("findings_source"), "analysed");
  EXPECT_EQ(of_rows(store::Reader(db).findings(ids.capture)), fresh);
}

TEST_F(Commands, OneFindingsRuleACaptureWithNoRowsLeftShowsItsStoredFindingsAndSaysSo) {
  const store::Finding stored = store_a_different_finding(db, ids.capture);
  {
    store::Database database = store::Database::open(db, store::OpenMode::read_write);
    ASSERT_TRUE(store::capture_has_rows(database, ids.capture));
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                              "CUPTI_ACTIVITY_KIND_RUNTIME", "iterations", "memory_events"})
      database.exec(std::string("DELETE FROM ") + table);
    ASSERT_FALSE(store::capture_has_rows(database, ids.capture));
  }
  const RuleImpacts expected = of_rows({stored});

  const Result report = call(run_report_command, {db, "--format", "json"});
  ASSERT_EQ(report.code, 0) << report.err;
  const json report_doc = json::parse(report.out);
  EXPECT_EQ(of_json(report_doc), expected);
  EXPECT_EQ(report_doc.at("findings_source"), "stored");

  const Result table = call(run_report_command, {db});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("findings as stored in the database: the capture has no rows left"),
            std::string::npos)
      << table.out;

  const AnalysisResult session = session_result(db);
  EXPECT_EQ(session.source, FindingsSource::stored);
  EXPECT_EQ(of_rows(session.findings), expected);

  const Result analyzed = call(run_analyze_command, {db, "--format", "json"});
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  const json analyze_doc = json::parse(analyzed.out);
  EXPECT_EQ(of_json(analyze_doc), expected);
  EXPECT_EQ(analyze_doc.at("findings_source"), "stored");
  // Shown, not stored again: the row is the one written before.
  const auto rows = store::Reader(db).findings(ids.capture);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, stored.id);
  // --rules still selects among them.
  const Result other =
      call(run_report_command, {db, "--format", "json", "--rules", "gpu_idle_gaps"});
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_TRUE(json::parse(other.out).at("findings").empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
