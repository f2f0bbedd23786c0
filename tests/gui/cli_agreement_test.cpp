// One fact, one place: on the same databases the GUI and the `fleetscope` command give the same
// consolidation plan (byte for byte, with the host's settings and with what-if changes), the
// same findings and the same fleet ranking — the GUI calls the analysis session and the sharer's
// planner the CLI calls, it has no planner or ranking of its own (issues 22, 23).
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QTest>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "panels.h"
#include "session.h"
#include "temp_dir.h"

namespace fleetscope::gui {
namespace {

using test_support::run_cli;

class CliAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two hosts' databases, one job each on its own GPU, both mostly idle (gemm 300 µs of each
    // 1 ms step: GPU utilization 40 %, a co-location candidate) with measured memory.
    a_ = dir_.file("host-a.db");
    b_ = dir_.file("host-b.db");
    testing::write_fixture(a_, /*gemm_us=*/300);
    testing::write_fixture(b_, /*gemm_us=*/300);
  }
  // The plan part of `share plan --format json` (without the fields only the CLI prints).
  static std::string cli_plan(const std::vector<std::string>& args,
                              std::vector<std::string>* not_planned = nullptr) {
    const auto run = run_cli(args);
    EXPECT_EQ(run.code, 0) << run.err;
    nlohmann::json doc = nlohmann::json::parse(run.out);
    if (not_planned) *not_planned = doc.at("not_planned").get<std::vector<std::string>>();
    for (const char* key : {"interference", "context_source", "not_planned"}) doc.erase(key);
    return doc.dump(2);
  }
  test_support::TempDir dir_;
  std::string a_, b_;
};

TEST_F(CliAgreementTest, TheGuiPlansByteForByteAsSharePlan) {
  auto session = open_session(std::vector<std::string>{a_, b_});
  const SharingState gui = plan_sharing(*session);
  ASSERT_EQ(gui.jobs.size(), 2u);  // both placeable: the comparison is not vacuous
  std::vector<std::string> not_planned;
  const std::string cli = cli_plan({"share", "plan", a_, b_, "--format", "json"}, &not_planned);
  EXPECT_EQ(sharer::plan_to_json(gui.plan).dump(2), cli);
  EXPECT_EQ(gui.skipped, not_planned);
  EXPECT_FALSE(gui.interference.empty());  // the panel names the model

  // What-if: the controls change the settings as share plan's flags do.
  WhatIf what_if;
  what_if.max_slowdown = 2.5;
  what_if.single_lane = true;
  what_if.margin_sigma = 1.5;
  const SharingState changed = plan_sharing(*session, what_if);
  EXPECT_TRUE(changed.plan.single_lane);
  EXPECT_EQ(sharer::plan_to_json(changed.plan).dump(2),
            cli_plan({"share", "plan", a_, b_, "--format", "json", "--max-slowdown", "2.5",
                      "--single-lane", "--margin-sigma", "1.5"}));
}

TEST_F(CliAgreementTest, TheWhatIfControlsOfTheRealWindowPlanAsSharePlansFlags) {
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QStringList{QString::fromStdString(a_), QString::fromStdString(b_)});
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  window.show_view("sharing");
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  SharingPanel* sharing = window.sharing_panel();
  ASSERT_TRUE(sharing->state());
  const std::string host_plan = cli_plan({"share", "plan", a_, b_, "--format", "json"});
  EXPECT_EQ(sharer::plan_to_json(sharing->state()->plan).dump(2), host_plan);
  EXPECT_TRUE(sharing->model_label()->text().contains(
      QString::fromStdString(sharing->state()->interference)));

  // The interference control, by keyboard: alpha 3 (strong contention) instead of the host's
  // model: the plan is share plan --interference-alpha 3's, and the label names that model.
  sharing->interference()->setFocus();
  QTest::keyClick(sharing->interference(), Qt::Key_Down);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(sharing->interference_alpha()->isEnabled());
  sharing->interference_alpha()->setFocus();
  QTest::keyClick(sharing->interference_alpha(), Qt::Key_A, Qt::ControlModifier);
  QTest::keyClicks(sharing->interference_alpha(), "3");
  QTest::keyClick(sharing->interference_alpha(), Qt::Key_Return);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(sharing->state());
  EXPECT_EQ(sharing->state()->interference_source, "flag");
  const std::string alpha_plan =
      cli_plan({"share", "plan", a_, b_, "--format", "json", "--interference-alpha", "3"});
  EXPECT_NE(alpha_plan, host_plan);  // the control changes the plan: the comparison is not vacuous
  EXPECT_EQ(sharer::plan_to_json(sharing->state()->plan).dump(2), alpha_plan);
  EXPECT_TRUE(sharing->model_label()->text().contains("alpha = 3, given with --interference-alpha"))
      << sharing->model_label()->text().toStdString();

  // The turn policy (share plan --policy): the GUI plans again for it, as share plan does, and
  // the label names it; Apply would hand over the plan's policy.
  ASSERT_EQ(sharing->policy()->currentText(), "fifo");
  sharing->policy()->setFocus();
  QTest::keyClick(sharing->policy(), Qt::Key_Down);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  EXPECT_EQ(sharing->turn_policy(), "srtf");
  EXPECT_TRUE(sharing->model_label()->text().contains("lane policy srtf"))
      << sharing->model_label()->text().toStdString();
  EXPECT_EQ(sharer::plan_to_json(sharing->state()->plan).dump(2),
            cli_plan({"share", "plan", a_, b_, "--format", "json", "--interference-alpha", "3",
                      "--policy", "srtf"}));
  QTest::keyClick(sharing->policy(), Qt::Key_Up);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  EXPECT_EQ(sharing->turn_policy(), "fifo");
  EXPECT_EQ(sharer::plan_to_json(sharing->state()->plan).dump(2), alpha_plan);

  // Back to the host's model: the host's plan again.
  sharing->interference()->setFocus();
  QTest::keyClick(sharing->interference(), Qt::Key_Up);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  EXPECT_FALSE(sharing->interference_alpha()->isEnabled());
  EXPECT_EQ(sharer::plan_to_json(sharing->state()->plan).dump(2), host_plan);
}

// The turn policy control of the real window plans as `share plan --policy P` for every policy,
// and it must change the plan here. Three hosts, one job each, time-slicing one lane per GPU
// (single-lane mode): a (priority 2, a p99 target, so it may share; at most 1.45x) and two
// batch jobs b and c (at most 2x). fifo: a lane of a and b holds a's bound, a third job would
// make a wait for two GPU phases (beyond 1.45x): two GPUs stay. priority: a waits for at most
// one started GPU phase however many batch jobs share its lane: all three on one GPU.
TEST_F(CliAgreementTest, TheTurnPolicyControlPlansAsSharePlanPolicyAndChangesThePlan) {
  const std::string c = dir_.file("host-c.db");
  testing::write_fixture(c, /*gemm_us=*/300);
  const auto label = [](const std::string& db, const std::string& labels) {
    store::Database database = store::Database::open(db, store::OpenMode::read_write);
    database.exec("UPDATE workflows SET labels = '" + labels + "'");
  };
  label(a_, R"({"priority":"2","p99_target_ms":"1000","max_slowdown":"1.45"})");
  label(b_, R"({"max_slowdown":"2"})");
  label(c, R"({"max_slowdown":"2"})");
  MainWindow window(false);
  window.resize(1400, 900);
  window.show();
  window.open(QStringList{QString::fromStdString(a_), QString::fromStdString(b_),
                          QString::fromStdString(c)});
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  window.show_view("sharing");
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  SharingPanel* sharing = window.sharing_panel();
  ASSERT_TRUE(sharing->state());
  ASSERT_EQ(sharing->state()->jobs.size(), 3u) << "every job must reach the planner";
  sharing->single_lane()->setFocus();
  QTest::keyClick(sharing->single_lane(), Qt::Key_Space);
  ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
  ASSERT_TRUE(sharing->state()->plan.single_lane);
  std::map<std::string, std::string> plans;
  for (const std::string policy : {"fifo", "srtf", "priority"}) {
    if (policy != "fifo") {
      sharing->policy()->setFocus();
      QTest::keyClick(sharing->policy(), Qt::Key_Down);
      ASSERT_TRUE(window.wait_loaded()) << window.last_error().toStdString();
    }
    ASSERT_EQ(sharing->policy()->currentText().toStdString(), policy);
    EXPECT_EQ(sharing->turn_policy(), policy);
    EXPECT_EQ(sharer::turn_order_name(sharing->state()->options.turn_order), policy);
    EXPECT_TRUE(sharing->model_label()->text().contains(QString::fromStdString(
        "turn policy " + sharer::turn_order_model(*sharer::turn_order_named(policy)))))
        << sharing->model_label()->text().toStdString();
    plans[policy] = sharer::plan_to_json(sharing->state()->plan).dump(2);
    EXPECT_EQ(plans[policy], cli_plan({"share", "plan", a_, b_, c, "--format", "json",
                                       "--single-lane", "--policy", policy}))
        << policy;
  }
  const auto gpus_after = [&](const std::string& policy) {
    return nlohmann::json::parse(plans[policy]).at("gpus_after").get<int>();
  };
  EXPECT_EQ(gpus_after("fifo"), 2) << plans["fifo"];
  EXPECT_EQ(gpus_after("priority"), 1) << plans["priority"];
  EXPECT_NE(plans["fifo"], plans["priority"]);
}

TEST_F(CliAgreementTest, ABusyJobIsNeverPlannedByTheGuiOrSharePlan) {
  // A third host whose job keeps its GPU 90 % busy: the analyzer's verdict is "not a candidate",
  // and neither the GUI nor `share plan` may put it in a shared lane.
  const std::string busy = dir_.file("host-busy.db");
  testing::write_fixture(busy, /*gemm_us=*/900);
  auto session = open_session(std::vector<std::string>{a_, busy});
  const SharingState gui = plan_sharing(*session);
  ASSERT_EQ(gui.candidates.size(), 2u);
  const auto& busy_candidate = gui.candidates[1];
  EXPECT_FALSE(busy_candidate.co_location_candidate);
  EXPECT_GE(busy_candidate.utilization, 0.5);
  ASSERT_EQ(gui.jobs.size(), 1u);  // only host-a's job reaches the planner
  EXPECT_EQ(gui.jobs[0].job_id.find("host-busy.db"), std::string::npos) << gui.jobs[0].job_id;
  for (const auto& job : gui.plan.jobs)
    EXPECT_EQ(job.job_id.find("host-busy.db"), std::string::npos) << job.job_id;
  ASSERT_EQ(gui.skipped.size(), 1u);
  EXPECT_EQ(gui.skipped[0], "train on GPU 0: not a candidate: " + busy_candidate.reason);
  EXPECT_NE(gui.skipped[0].find("GPU utilization 90 %"), std::string::npos) << gui.skipped[0];

  std::vector<std::string> not_planned;
  const std::string cli = cli_plan({"share", "plan", a_, busy, "--format", "json"}, &not_planned);
  EXPECT_EQ(sharer::plan_to_json(gui.plan).dump(2), cli);
  EXPECT_EQ(not_planned, gui.skipped);
  EXPECT_EQ(cli.find("host-busy.db"), std::string::npos) << cli;
}

TEST_F(CliAgreementTest, TheGuiShowsTheFindingsTheCliPrints) {
  auto findings_of = [](const nlohmann::json& doc) {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& f : doc.at("findings"))
      out.emplace_back(f.at("rule").get<std::string>(), f.at("impact_ns").get<int64_t>());
    std::sort(out.begin(), out.end());
    return out;
  };
  auto gui_findings = [](const std::string& db) {
    auto session = open_session(db);
    const CaptureAnalysis a = analyze_capture(*session, session->captures.at(0));
    std::vector<std::pair<std::string, int64_t>> out;
    for (const auto& f : a.result().findings) out.emplace_back(f.rule, f.impact_ns);
    std::sort(out.begin(), out.end());
    return out;
  };
  // The one rule for stored vs fresh findings (analyzer/analysis.h, capture_findings()): stored
  // findings that differ from a fresh analysis (another run's thresholds) are not what the GUI
  // shows; it shows what `analyze` and `report` print, analysed now.
  {
    store::Database db = store::Database::open(a_, store::OpenMode::read_write);
    db.exec("UPDATE findings SET rule = 'dataloader_bottleneck', impact_ns = 5");
  }
  std::vector<std::pair<std::string, int64_t>> stored;
  for (const auto& f : store::Reader(a_).findings()) stored.emplace_back(f.rule, f.impact_ns);
  std::sort(stored.begin(), stored.end());
  ASSERT_FALSE(stored.empty());
  auto report = run_cli({"report", a_, "--format", "json"});
  ASSERT_EQ(report.code, 0) << report.err;
  const auto fresh = findings_of(nlohmann::json::parse(report.out));
  ASSERT_FALSE(fresh.empty());
  ASSERT_NE(fresh, stored);  // the comparison is not vacuous
  EXPECT_EQ(gui_findings(a_), fresh);
  auto analyze = run_cli({"analyze", a_, "--no-store", "--format", "json"});
  ASSERT_EQ(analyze.code, 0) << analyze.err;
  EXPECT_EQ(findings_of(nlohmann::json::parse(analyze.out)), fresh);
  // None stored: the same.
  {
    store::Database db = store::Database::open(b_, store::OpenMode::read_write);
    db.exec("DELETE FROM findings");
  }
  EXPECT_EQ(gui_findings(b_), fresh);
}

TEST_F(CliAgreementTest, TheFleetTableIsFleetscopeFleet) {
  auto session = open_session(std::vector<std::string>{a_, b_});
  const FleetRows gui = session->analysis->fleet();
  const auto run = run_cli({"fleet", a_, b_, "--format", "json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const auto cli = nlohmann::json::parse(run.out);
  ASSERT_EQ(cli.size(), gui.size());
  ASSERT_FALSE(gui.empty());
  for (size_t i = 0; i < gui.size(); ++i) {
    EXPECT_EQ(cli[i].at("workflow").get<std::string>(), gui[i].workflow);
    EXPECT_EQ(cli[i].at("span_ns").get<int64_t>(), gui[i].span_ns);
    EXPECT_EQ(cli[i].at("idle_ns").get<int64_t>(), gui[i].idle_ns);
    EXPECT_EQ(cli[i].at("captures").get<int64_t>(), gui[i].captures);
  }
}

}  // namespace
}  // namespace fleetscope::gui
