// Every model of the GUI under QAbstractItemModelTester (fatal on any violation of the model
// contract), filled from real library results, plus checks of what the rows say.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>

#include "fleetscope/store/database.h"
#include "fleetscope/store/reader.h"
#include "gui_fixture.h"
#include "models.h"
#include "session.h"
#include "temp_dir.h"
#include "tree_model.h"

namespace fleetscope::gui {
namespace {

using Tester = QAbstractItemModelTester;
constexpr auto kFatal = QAbstractItemModelTester::FailureReportingMode::Fatal;

class ModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    fixture_ = testing::write_fixture(path_);
    session_ = open_session(path_);
    fleet_ = session_->analysis->fleet();
    capture_ = analyze_capture(*session_, session_->captures.at(0));
    sharing_ = plan_sharing(*session_);
  }
  test_support::TempDir dir_;
  std::string path_;
  testing::Fixture fixture_;
  std::shared_ptr<Session> session_;
  FleetRows fleet_;
  CaptureAnalysis capture_;
  SharingState sharing_;
};

TEST_F(ModelsTest, FleetModel) {
  FleetModel model;
  Tester tester(&model, kFatal);
  model.set_rows(fleet_);
  ASSERT_EQ(model.rowCount(), 1);
  EXPECT_EQ(model.index(0, FleetModel::workflow).data().toString(), "train");
  EXPECT_EQ(model.index(0, FleetModel::user).data().toString(), "alice");
  // The job's GPU utilization (analyzer/gpu_utilization.h): busy 500 µs of every 1 ms step on
  // GPU 0 (gemm [1000,1400) + relu [1450,1550)); the window is the ten steps' span, 10 ms.
  const analyzer::WorkflowWaste& row = fleet_[0];
  EXPECT_EQ(row.span_ns, 10'000'000);
  EXPECT_EQ(row.busy_ns, 10 * 500'000);
  // The analyzer's top finding now, not the stored gpu_idle_gaps of an earlier run.
  EXPECT_EQ(model.index(0, FleetModel::top_finding).data().toString().left(10), "few_blocks");
  EXPECT_NEAR(model.index(0, FleetModel::utilization).data(kSortRole).toDouble(), 0.5, 1e-9);
  model.set_rows({});
  EXPECT_EQ(model.rowCount(), 0);
}

TEST_F(ModelsTest, FindingsModelListsFindingsByImpactThenRulesNotEvaluated) {
  FindingsModel model;
  Tester tester(&model, kFatal);
  model.set_rows(finding_rows(capture_.result()));
  ASSERT_GE(model.rowCount(), 1);
  EXPECT_EQ(model.index(0, FindingsModel::rule).data().toString(), "few_blocks");
  EXPECT_EQ(model.index(0, FindingsModel::impact).data(kSortRole).toLongLong(), 5'000'000);
  bool not_evaluated = false;
  for (int r = 0; r < model.rowCount(); ++r)
    not_evaluated |= model.index(r, FindingsModel::severity).data().toString() == "not evaluated";
  // The fixture has no NVTX and no communication: some rule lacks its input.
  EXPECT_TRUE(not_evaluated);
}

TEST_F(ModelsTest, AggregateSqlPlanStoredAndKeyValueModels) {
  AggregateModel aggregate;
  Tester t1(&aggregate, kFatal);
  aggregate.set_range_length(1000);
  aggregate.set_rows(
      {{EventKind::kernel, "gemm", 2, 500}, {EventKind::runtime, "cudaLaunchKernel", 2, 20}});
  EXPECT_EQ(aggregate.index(0, AggregateModel::share).data().toString(), "50.0 %");

  SqlResultModel sql;
  Tester t2(&sql, kFatal);
  auto reader = session_->reader();
  sql.set_result(
      reader->query("SELECT COUNT(*) AS n, NULL AS empty FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  ASSERT_EQ(sql.columnCount(), 2);
  EXPECT_EQ(sql.headerData(0, Qt::Horizontal, Qt::DisplayRole).toString(), "n");
  EXPECT_EQ(sql.index(0, 0).data().toString(), "20");
  EXPECT_EQ(sql.index(0, 1).data().toString(), "NULL");
  sql.set_result(reader->query("SELECT 1 AS a, 2 AS b, 3 AS c"));
  EXPECT_EQ(sql.columnCount(), 3);

  PlanJobsModel jobs;
  Tester t3(&jobs, kFatal);
  jobs.set_rows(sharing_.plan.jobs);
  EXPECT_EQ(size_t(jobs.rowCount()), sharing_.plan.jobs.size());

  CandidatesModel candidates;
  Tester t6(&candidates, kFatal);
  candidates.set_rows(sharing_.candidates);
  ASSERT_EQ(candidates.rowCount(), 1);  // train on GPU 0
  EXPECT_EQ(candidates.index(0, CandidatesModel::job).data().toString(), "train");
  // P: 1 GiB held between steps; T: 64 MiB allocated inside each step.
  EXPECT_EQ(candidates.index(0, CandidatesModel::persistent).data(kSortRole).toLongLong(),
            int64_t{1} << 30);
  EXPECT_EQ(candidates.index(0, CandidatesModel::ephemeral).data(kSortRole).toLongLong(), 64 << 20);

  StoredPlansModel stored;
  Tester t4(&stored, kFatal);
  stored.set_rows({{7, 100, "pack", "{}", true}});
  EXPECT_EQ(stored.index(0, 3).data().toString(), "yes");

  KeyValueModel kv;
  Tester t5(&kv, kFatal);
  kv.set_rows({{"name", "gemm"}});
  EXPECT_EQ(kv.index(0, 1).data().toString(), "gemm");
}

TEST_F(ModelsTest, SharingEventsModelShowsTheDatabasesSharingEvents) {
  const int64_t plan = testing::write_sharing_records(
      path_,
      {.created_ns = 1700000000000000000, .policy = "fifo", .plan_json = "{}", .applied = true},
      {{1700000000000000000, testing::kThisPlan, "plan_applied", R"({"workflows":["train"]})"},
       {1700000001250000000, testing::kThisPlan, "job_admitted",
        R"({"pid":4242,"uid":1000,"workflow":"train","gpu":"GPU-abc","gpu_index":0,"lane":"lane-1"})"},
       {1700000002000000000, std::nullopt, "job_unshared", "not json"}});
  const SharingState sharing = plan_sharing(*open_session(path_));
  ASSERT_EQ(sharing.events.size(), 3u);
  EXPECT_FALSE(sharing.events_truncated);

  SharingEventsModel events;
  Tester tester(&events, kFatal);
  events.set_rows(sharing.events);
  ASSERT_EQ(events.rowCount(), 3);
  using C = SharingEventsModel;
  auto text = [&](int row, int column) { return events.index(row, column).data().toString(); };
  // Oldest first, as written.
  EXPECT_EQ(text(0, C::kind), "plan_applied");
  EXPECT_EQ(text(0, C::time), "2023-11-14 22:13:20.000");
  EXPECT_EQ(text(0, C::plan), QString::number(plan));
  EXPECT_EQ(text(0, C::job), "");
  EXPECT_EQ(text(1, C::kind), "job_admitted");
  EXPECT_EQ(text(1, C::time), "2023-11-14 22:13:21.250");
  EXPECT_EQ(text(1, C::job), "pid 4242 train");
  EXPECT_EQ(text(1, C::gpu), "GPU-abc");
  EXPECT_EQ(text(1, C::lane), "lane-1");
  EXPECT_TRUE(text(1, C::detail).contains("\"uid\":1000"));
  EXPECT_EQ(events.index(1, C::time).data(kSortRole).toLongLong(), 1700000001250000000);
  // No plan, and a detail that is not JSON: shown whole, the other columns empty.
  EXPECT_EQ(text(2, C::kind), "job_unshared");
  EXPECT_EQ(text(2, C::plan), "—");
  EXPECT_EQ(text(2, C::detail), "not json");
  EXPECT_EQ(text(2, C::lane), "");
}

TEST_F(ModelsTest, TrackModelNestsHostProcessGpuStream) {
  auto reader = session_->reader();
  const TimelineData data = load_timeline(*reader, fixture_.capture);
  TrackModel model;
  Tester tester(&model, kFatal);
  model.set_tracks(data.tracks, data.events);
  ASSERT_EQ(model.rowCount(), 1);
  const QModelIndex host = model.index(0, 0);
  EXPECT_EQ(host.data().toString(), "node-a");
  const QModelIndex process = model.index(0, 0, host);
  EXPECT_EQ(process.data().toString(), "process 321");
  QStringList children;
  for (int r = 0; r < model.rowCount(process); ++r)
    children << model.index(r, 0, process).data().toString();
  EXPECT_EQ(children, (QStringList{"iterations", "GPU 0", "thread 322"}));
  const QModelIndex gpu = model.index(1, 0, process);
  EXPECT_EQ(model.index(0, 0, gpu).data().toString(), "stream 7");
  EXPECT_EQ(model.index(0, 1, gpu).data().toString(), "11");
  for (size_t t = 0; t < data.tracks.size(); ++t)
    EXPECT_EQ(model.node(model.index_of_track(t))->payload, int64_t(t));
}

TEST_F(ModelsTest, SharingModelShowsGpusLanesAndJobs) {
  // Two half-idle jobs on two 40 GiB GPUs: the planner puts them on one GPU.
  std::vector<sharer::JobProfile> jobs(2);
  for (int i = 0; i < 2; ++i) {
    jobs[size_t(i)].job_id = "job" + std::to_string(i);
    jobs[size_t(i)].gpu = "gpu" + std::to_string(i);
    jobs[size_t(i)].persistent_bytes = int64_t{4} << 30;
    jobs[size_t(i)].ephemeral_peak_bytes = int64_t{2} << 30;
    jobs[size_t(i)].gpu_capacity_bytes = int64_t{40} << 30;
    jobs[size_t(i)].utilization = 0.2;
    jobs[size_t(i)].iteration_ns = 1'000'000;
  }
  const auto plan = sharer::plan_consolidation(jobs);
  ASSERT_EQ(plan.gpus_freed.size(), 1u);
  SharingModel model;
  Tester tester(&model, kFatal);
  model.set_plan(plan, jobs);
  ASSERT_EQ(model.rowCount(), 2);  // the GPU kept, the GPU freed
  const QModelIndex gpu = model.index(0, 0);
  int job_rows = 0;
  for (int l = 0; l < model.rowCount(gpu); ++l) job_rows += model.rowCount(model.index(l, 0, gpu));
  EXPECT_EQ(job_rows, 2);
  EXPECT_EQ(model.index(1, 4).data().toString(), "freed");
}

TEST_F(ModelsTest, SourcesModelHasOneRowPerOpenSource) {
  const std::string second = dir_.file("second.db");
  testing::write_fixture(second);
  auto both = open_session(std::vector<std::string>{path_, second});
  SourcesModel model;
  Tester tester(&model, kFatal);
  model.set_rows(source_summaries(*both));
  ASSERT_EQ(model.rowCount(), 2);
  EXPECT_EQ(model.index(0, SourcesModel::file).data().toString(), "trace.db");
  EXPECT_EQ(model.index(1, SourcesModel::file).data().toString(), "second.db");
  EXPECT_EQ(model.index(1, SourcesModel::format).data().toString(), "fleetscope database");
  EXPECT_EQ(model.index(1, SourcesModel::captures).data().toString(), "1");
  model.set_rows({});
  EXPECT_EQ(model.rowCount(), 0);
}

TEST_F(ModelsTest, DiffModelsShowTheMetricAndKernelChanges) {
  const std::string second = dir_.file("second.db");
  testing::write_fixture(second);
  auto both = open_session(std::vector<std::string>{path_, second});
  const auto diff = compare_captures(*both, both->captures[0], both->captures[1]);
  MetricDeltaModel metrics;
  Tester t1(&metrics, kFatal);
  metrics.set_rows(diff.metrics);
  ASSERT_EQ(size_t(metrics.rowCount()), diff.metrics.size());
  ASSERT_GT(metrics.rowCount(), 0);
  EXPECT_EQ(metrics.index(0, MetricDeltaModel::metric).data().toString(), "span_ns");
  // The same capture twice: no change, a ratio of 1.
  EXPECT_EQ(metrics.index(0, MetricDeltaModel::delta).data(kSortRole).toDouble(), 0.0);
  EXPECT_EQ(metrics.index(0, MetricDeltaModel::ratio).data().toString(), "1.000x");
  KernelDeltaModel kernels;
  Tester t2(&kernels, kFatal);
  kernels.set_rows(diff.kernels);
  ASSERT_GT(kernels.rowCount(), 0);
  EXPECT_EQ(kernels.index(0, KernelDeltaModel::change).data(kSortRole).toLongLong(), 0);
}

}  // namespace
}  // namespace fleetscope::gui

namespace fleetscope::gui {
namespace {

TEST(FleetFormat, OneFixedFormatForEveryRowAndTheTotals) {
  // The GUI printed 0.0001852 beside 8.429e-05: now one fixed format.
  EXPECT_EQ(format_gpu_hours(0.0001852), "0.000185");
  EXPECT_EQ(format_gpu_hours(8.429e-05), "0.000084");
  EXPECT_EQ(format_gpu_hours(1234.5), "1234.50");
  analyzer::WorkflowWaste a, b;
  a.span_ns = 3'600'000'000'000, a.busy_ns = 900'000'000'000;  // 1 GPU-hour, 25 % busy
  b.span_ns = 3'600'000'000'000, b.busy_ns = 2'700'000'000'000;
  EXPECT_EQ(fleet_totals({a, b}),
            "Total: 2 job(s), 2.000000 GPU-hours, 1.000000 wasted (50.0 % GPU utilization)");
}

}  // namespace
}  // namespace fleetscope::gui
