// Every reading command (info, analyze, report, export, fleet, diff, candidates) accepts the
// three inputs through one dispatch (importers/open_input.h): a fleetscope database, a Kineto
// trace and an nsys SQLite export; and every one takes `--capture N|all` the same way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fleetscope/importers/open_input.h"
#include "fleetscope/store/writer.h"
#include "nsys_export.h"
#include "temp_dir.h"

using namespace fleetscope;

namespace {

using test_support::CliRun;
using test_support::run_cli;

const std::string kKineto =
    std::string(FLEETSCOPE_SHARED_DATA) +
    "/traces/kineto/hta-critical_path_cuda_event_sync_event_sync_trace.json.gz";

// A database with two captures, each one job with two kernels.
std::string two_capture_db(const test_support::TempDir& dir) {
  const std::string path = dir.file("two.db");
  store::Writer w(store::Database::create(path));
  for (int n = 0; n < 2; ++n) {
    const int64_t cap = w.add_capture({.source = "test", .start_ns = 0, .end_ns = 1'000'000'000});
    w.add_gpu({.id = 0, .captureId = cap, .name = "NVIDIA A100", .smCount = 108});
    w.upsert_process({.captureId = cap, .globalPid = store::global_pid(40 + n), .pid = 40 + n});
    for (int64_t start : {1'000'000, 900'000'000}) {
      store::Kernel k;
      k.start = start + n * 100'000, k.end = k.start + 2'000'000, k.demangledName = "gemm";
      k.streamId = 7, k.captureId = cap, k.globalPid = store::global_pid(40 + n);
      w.add(k);
    }
  }
  w.finish();
  return path;
}

TEST(ReadingInputs, OneDispatchTellsTheThreeKindsApart) {
  test_support::TempDir dir;
  EXPECT_EQ(importers::input_kind(two_capture_db(dir)), importers::InputKind::fleetscope_database);
  EXPECT_EQ(importers::input_kind(kKineto), importers::InputKind::kineto_json);
  const std::string nsys = test_support::make_nsys_export(dir.file("report.sqlite"));
  EXPECT_EQ(importers::input_kind(nsys), importers::InputKind::nsys_sqlite);
  const importers::OpenedInput opened = importers::open_input(nsys);
  EXPECT_TRUE(opened.imported());
  EXPECT_EQ(opened.reader().captures().size(), 1u);
  EXPECT_THROW(importers::input_kind(dir.path().string()), InputError);  // a directory
}

TEST(ReadingInputs, EveryReadingCommandTakesEveryKind) {
  test_support::TempDir dir;
  const std::string db = two_capture_db(dir);
  const std::string nsys = test_support::make_nsys_export(dir.file("report.sqlite"));
  for (const std::string& input : {db, nsys, kKineto}) {
    const std::vector<std::vector<std::string>> commands = {
        {"info", input, "--capture", "1"},
        {"analyze", input, "--capture", "1", "--no-store"},
        {"report", input, "--capture", "1", "--format", "json"},
        {"report", input, "--capture", "1", "-o", dir.file("r.html"), "--force"},
        {"export", input, "--capture", "1", "-o", dir.file("x.json"), "--quiet", "--force"},
        {"fleet", input, "--capture", "1"},
        {"diff", input, input, "--capture", "1"},
        {"candidates", input, "--capture", "1"}};
    for (const auto& args : commands) {
      const CliRun r = run_cli(args);
      EXPECT_EQ(r.code, 0) << args[0] << " " << input << ": " << r.err;
    }
    // Not a capture id, nor 'all': a usage error in every command, the same words.
    for (const char* command : {"info", "analyze", "report", "fleet", "candidates"}) {
      const CliRun r = run_cli({command, input, "--capture", "first"});
      EXPECT_EQ(r.code, 2) << command << " " << input << ": " << r.err;
      EXPECT_NE(r.err.find("--capture expects a capture id"), std::string::npos) << r.err;
    }
  }
}

TEST(ReadingInputs, SeveralCapturesAreChosenNotGuessed) {
  test_support::TempDir dir;
  const std::string db = two_capture_db(dir);
  const CliRun refused = run_cli({"analyze", db, "--no-store"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("holds 2 captures (1, 2)"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--capture all"), std::string::npos) << refused.err;
  EXPECT_EQ(run_cli({"report", db}).code, 1);

  const CliRun all = run_cli({"analyze", db, "--capture", "all", "--format", "json"});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.err.find("capture 1 of " + db), std::string::npos) << all.err;
  EXPECT_NE(all.err.find("capture 2 of " + db), std::string::npos) << all.err;
  const auto documents = nlohmann::json::parse(all.out);
  ASSERT_TRUE(documents.is_array());
  ASSERT_EQ(documents.size(), 2u);
  EXPECT_EQ(documents[1]["capture_id"], 2);

  EXPECT_EQ(run_cli({"analyze", db, "--capture", "3"}).code, 1);  // no such capture
  EXPECT_EQ(run_cli({"report", db, "--capture", "all", "-o", dir.file("r.html")}).code, 2);
  EXPECT_EQ(run_cli({"diff", db, db, "--capture", "all"}).code, 2);
  // info and candidates default to every capture.
  const CliRun info = run_cli({"info", db, "--format", "json"});
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out)["captures"].size(), 2u);
  const CliRun one = run_cli({"info", db, "--format", "json", "--capture", "2"});
  ASSERT_EQ(one.code, 0) << one.err;
  const auto only = nlohmann::json::parse(one.out);
  ASSERT_EQ(only["captures"].size(), 1u);
  EXPECT_EQ(only["captures"][0]["id"], 2);
  ASSERT_EQ(only["processes"].size(), 1u);  // the process of capture 2 only
  EXPECT_EQ(only["processes"][0]["pid"], 41);
}

// The findings do not depend on the format: table/json analyse now, as html does.
TEST(ReadingInputs, ReportMeansTheSameInEveryFormat) {
  test_support::TempDir dir;
  const std::string db = two_capture_db(dir);
  const CliRun json_report = run_cli({"report", db, "--capture", "2", "--format", "json"});
  ASSERT_EQ(json_report.code, 0) << json_report.err;
  const CliRun analysed =
      run_cli({"analyze", db, "--capture", "2", "--format", "json", "--no-store"});
  ASSERT_EQ(analysed.code, 0) << analysed.err;
  const auto a = nlohmann::json::parse(json_report.out), b = nlohmann::json::parse(analysed.out);
  EXPECT_EQ(a["findings"].size(), b["findings"].size());
  EXPECT_GT(a["findings"].size(), 0u);  // two 2 ms kernels 900 ms apart: an idle GPU
  // The whole document, metrics and summary included (report printed "metrics": null).
  EXPECT_EQ(a, b) << json_report.out;
  EXPECT_TRUE(a["metrics"].is_object()) << json_report.out;
  // The table is analyze's table too: the summary lines above the findings.
  const CliRun table_report = run_cli({"report", db, "--capture", "2", "--format", "table"});
  const CliRun table_analysed = run_cli({"analyze", db, "--capture", "2", "--no-store"});
  EXPECT_EQ(table_report.out, table_analysed.out);
  EXPECT_EQ(json_report.err.find("run `fleetscope analyze` first"), std::string::npos);
}

}  // namespace
