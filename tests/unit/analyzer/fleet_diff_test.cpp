#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "db_fixture.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/commands.h"
#include "fleetscope/analyzer/diff.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/session.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "shared_case.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;

// A job with two 100 µs kernels 900 µs apart on GPU 0.
void write_gappy_job(const std::string& path, const std::string& name) {
  store::Writer writer(store::Database::create(path));
  store::Capture c;
  c.source = "test";
  const int64_t capture = writer.add_capture(c);
  store::Workflow wf;
  wf.name = name;
  const int64_t workflow = writer.add_workflow(wf);
  store::Process p;
  p.globalPid = store::global_pid(77), p.pid = 77, p.workflow_id = workflow;
  writer.upsert_process(p);
  for (int64_t start : {0, 1000}) {
    store::Kernel k;
    k.start = us(start), k.end = us(start + 100), k.streamId = 7, k.demangledName = "conv";
    k.globalPid = store::global_pid(77), k.captureId = capture;
    writer.add(k);
  }
  writer.finish();
}

TEST(Fleet, RanksJobsByWastedGpuTime) {
  testing::TempDir dir;
  testing::write_shared_case(dir.file("a.db"), "resnet-train");
  write_gappy_job(dir.file("b.db"), "bert-eval");
  std::vector<std::string> seen;
  auto ranking = rank_workflows({dir.file("a.db"), dir.file("b.db")},
                                [&](const std::string& db, size_t, size_t) { seen.push_back(db); });
  EXPECT_EQ(seen.size(), 2u);
  ASSERT_EQ(ranking.size(), 2u);
  EXPECT_EQ(ranking[0].workflow, "bert-eval");
  EXPECT_EQ(ranking[0].idle_ns, us(900));
  EXPECT_EQ(ranking[0].span_ns, us(1100));
  EXPECT_EQ(ranking[1].workflow, "resnet-train");
  EXPECT_EQ(ranking[1].idle_ns, us(120));
  EXPECT_EQ(ranking[1].user, "alice");
  EXPECT_DOUBLE_EQ(ranking[1].utilization(), 0.76);
  EXPECT_DOUBLE_EQ(ranking[0].wasted_gpu_hours(), 900e3 / 3.6e12);
}

// The top finding per job: the capture's findings under the one rule (capture_findings(),
// analysis.h): analysed now, whether or not an earlier run stored others.
TEST(Fleet, TopFindingComesFromTheRulesRunNow) {
  testing::TempDir dir;
  testing::write_shared_case(dir.file("a.db"), "resnet-train");
  const auto fresh = analyze(load_capture(store::Reader(dir.file("a.db")), 1));
  ASSERT_FALSE(fresh.empty());
  const int64_t fresh_impact = [&] {
    int64_t sum = 0;
    for (const auto& f : fresh) sum += f.impact_ns;
    return sum;
  }();
  auto ranking = rank_workflows({dir.file("a.db")});
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].top_rule, fresh.front().rule) << "not analysed yet: the rules run";
  EXPECT_EQ(ranking[0].findings_impact_ns, fresh_impact);

  // A stored finding of an earlier run (other thresholds, another analyzer) is not read: the
  // ranking is what `analyze` and `report` show now.
  store::Finding stored = fresh.front();
  stored.rule = "dataloader_bottleneck", stored.impact_ns = 5, stored.captureId = 1;
  {
    store::Writer writer(store::Database::open(dir.file("a.db"), store::OpenMode::read_write));
    std::vector<store::Finding> findings{stored};
    store_findings(writer, 1, findings);
    writer.finish();
  }
  ranking = rank_workflows({dir.file("a.db")});
  EXPECT_EQ(ranking[0].top_rule, fresh.front().rule);
  EXPECT_EQ(ranking[0].findings_impact_ns, fresh_impact);
}

TEST(Fleet, SameJobAcrossDatabasesIsMerged) {
  testing::TempDir dir;
  write_gappy_job(dir.file("a.db"), "bert-eval");
  write_gappy_job(dir.file("b.db"), "bert-eval");
  auto ranking = rank_workflows({dir.file("a.db"), dir.file("b.db")});
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].captures, 2);
  EXPECT_EQ(ranking[0].idle_ns, us(1800));
}

// One file named twice (the same path, a link to it) is one host's database: counted once.
// `fleet a.db a.db` doubled the job's GPU-hours and waste while saying "1 capture".
TEST(Fleet, AFileGivenTwiceIsCountedOnce) {
  testing::TempDir dir;
  write_gappy_job(dir.file("a.db"), "bert-eval");
  std::filesystem::create_symlink(dir.file("a.db"), dir.file("link.db"));
  std::ostringstream out, err;
  ASSERT_EQ(
      run_fleet_command(
          {dir.file("a.db"), dir.file("a.db"), dir.file("link.db"), "--format", "json"}, out, err),
      0)
      << err.str();
  const auto ranking = nlohmann::json::parse(out.str());
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].at("captures"), 1);
  EXPECT_EQ(ranking[0].at("idle_ns"), us(900));
  EXPECT_EQ(ranking[0].at("span_ns"), us(1100));
  EXPECT_EQ(ranking[0].at("devices"), 1);
  EXPECT_NE(err.str().find("fleet: " + dir.file("link.db") +
                           ": the same file as an earlier input; counted once"),
            std::string::npos)
      << err.str();
}

// The analysis session (the GUI's fleet, `share plan DB...`) opens one file once: the GUI's fleet
// of "all.db alias.db" (a link) doubled every job, and `share plan a.db a.db` listed each job
// twice as a candidate to place beside itself.
TEST(Fleet, TheSessionOpensAFileNamedTwiceOnce) {
  testing::TempDir dir;
  write_gappy_job(dir.file("a.db"), "bert-eval");
  std::filesystem::create_symlink(dir.file("a.db"), dir.file("link.db"));
  AnalysisSession session;
  const SessionSource& first = session.open(dir.file("a.db"));
  EXPECT_EQ(&session.open(dir.file("a.db")), &first);
  EXPECT_EQ(&session.open(dir.file("link.db")), &first);
  EXPECT_EQ(session.sources().size(), 1u);
  EXPECT_EQ(session.captures().size(), 1u);
  const auto ranking = session.fleet();
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].idle_ns, us(900));
  EXPECT_EQ(ranking[0].captures, 1);
}

TEST(Diff, ReportsMetricDeltasAndKernelChanges) {
  CaptureData before = testing::shared_case();
  testing::CaptureBuilder b;
  b.kernel(0, us(100), 7, "gemm").kernel(us(100), us(150), 7, "gemm");
  CaptureData after = b.build();
  CaptureDiff d = diff_captures(before, after);
  EXPECT_EQ(d.before.idle_ns, us(120));
  EXPECT_EQ(d.after.idle_ns, 0);
  EXPECT_EQ(d.before.kernels, 5);
  EXPECT_EQ(d.after.kernels, 2);
  const MetricDelta* idle = nullptr;
  for (const auto& m : d.metrics)
    if (m.metric == "idle_ns") idle = &m;
  ASSERT_NE(idle, nullptr);
  EXPECT_DOUBLE_EQ(idle->delta(), -120e3);
  EXPECT_DOUBLE_EQ(idle->ratio(), 0.0);
  ASSERT_FALSE(d.kernels.empty());
  EXPECT_EQ(d.kernels[0].name, "gemm");  // 300 µs → 150 µs, the largest change
  EXPECT_EQ(d.kernels[0].count_before, 3);
  EXPECT_EQ(d.kernels[0].count_after, 2);
}

}  // namespace
}  // namespace fleetscope::analyzer
