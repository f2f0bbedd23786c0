// The step-time tail per workflow (step_durations_by_workflow + step_stats), as `fleetscope fleet`
// ranks it, merged across databases.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/attribution.h"
#include "fleetscope/analyzer/fleet.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer {
namespace {

using testing::us;

// A job with one kernel per step and the given step durations (µs), steps back to back.
void write_job(const std::string& path, const std::string& name,
               const std::vector<int64_t>& step_us) {
  store::Writer writer(store::Database::create(path));
  store::Capture c;
  c.source = "test";
  const int64_t capture = writer.add_capture(c);
  store::Workflow wf;
  wf.name = name;
  const int64_t workflow = writer.add_workflow(wf);
  store::Process p;
  p.captureId = capture, p.globalPid = store::global_pid(77), p.pid = 77, p.workflow_id = workflow;
  writer.upsert_process(p);
  int64_t t = 0;
  for (size_t i = 0; i < step_us.size(); ++i) {
    store::Iteration it;
    it.captureId = capture, it.globalPid = store::global_pid(77);
    it.step = static_cast<int64_t>(i), it.start = us(t), it.end = us(t + step_us[i]);
    writer.add(it);
    store::Kernel k;
    k.start = us(t), k.end = us(t + 5), k.streamId = 7, k.demangledName = "step_kernel";
    k.globalPid = store::global_pid(77), k.captureId = capture;
    writer.add(k);
    t += step_us[i];
  }
  writer.finish();
}

TEST(FleetTail, StepTimeQuantilesPerWorkflowAcrossDatabases) {
  testing::TempDir dir;
  // Nine 100 µs steps and one of 500 µs, split over two databases of the same job. Each capture
  // ends inside a last, short ProfilerStep (20 µs, 30 µs), which is not a step (HTA's rule,
  // counted_steps()).
  write_job(dir.file("a.db"), "llm-train", {100, 100, 100, 100, 500, 20});
  write_job(dir.file("b.db"), "llm-train", {100, 100, 100, 100, 100, 20});
  write_job(dir.file("c.db"), "steady", {200, 200, 30});
  const auto ranking = rank_workflows({dir.file("a.db"), dir.file("b.db"), dir.file("c.db")});
  ASSERT_EQ(ranking.size(), 2u);
  const WorkflowWaste& llm = ranking[0].workflow == "llm-train" ? ranking[0] : ranking[1];
  const WorkflowWaste& steady = ranking[0].workflow == "steady" ? ranking[0] : ranking[1];
  EXPECT_EQ(llm.steps.count, 10);
  EXPECT_EQ(llm.steps.median_ns, us(100));  // nearest rank: the 5th of 10
  EXPECT_EQ(llm.steps.p90_ns, us(100));     // the 9th
  EXPECT_EQ(llm.steps.p99_ns, us(500));     // the 10th
  EXPECT_GT(llm.steps.jitter, 0.5);
  EXPECT_EQ(steady.steps.count, 2);
  EXPECT_EQ(steady.steps.p99_ns, us(200));
  EXPECT_EQ(steady.steps.jitter, 0.0);

  std::ostringstream out;
  write_fleet_ranking(ranking, "json", out);
  const auto list = nlohmann::json::parse(out.str());
  bool found = false;
  for (const auto& w : list)
    if (w.at("workflow") == "llm-train") {
      found = true;
      EXPECT_EQ(w.at("steps"), 10);
      EXPECT_EQ(w.at("step_p50_ns"), us(100));
      EXPECT_EQ(w.at("step_p90_ns"), us(100));
      EXPECT_EQ(w.at("step_p99_ns"), us(500));
    }
  EXPECT_TRUE(found);

  std::ostringstream table;
  write_fleet_ranking(ranking, "table", table);
  EXPECT_NE(table.str().find("STEP P50/P99"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("100.0 us / 500.0 us"), std::string::npos) << table.str();
}

TEST(FleetTail, StepDurationsGoToTheWorkflowOfTheirProcess) {
  testing::CaptureBuilder b;
  CaptureData& raw = b.raw();
  store::Workflow a, c;
  a.id = 1, a.name = "a", c.id = 2, c.name = "c";
  raw.workflows = {a, c};
  store::Process pa, pc;
  pa.globalPid = store::global_pid(10), pa.pid = 10, pa.workflow_id = 1;
  pc.globalPid = store::global_pid(20), pc.pid = 20, pc.workflow_id = 2;
  raw.processes = {pa, pc};
  b.step(1, us(0), us(100)).step(2, us(100), us(300));
  raw.iterations[0].globalPid = store::global_pid(10);
  raw.iterations[1].globalPid = store::global_pid(20);
  const auto by_workflow = step_durations_by_workflow(b.build());
  ASSERT_EQ(by_workflow.size(), 2u);
  EXPECT_EQ(by_workflow.at("a"), std::vector<int64_t>{us(100)});
  EXPECT_EQ(by_workflow.at("c"), std::vector<int64_t>{us(200)});
}

}  // namespace
}  // namespace fleetscope::analyzer
