// The GUI against a real fleetscoped started on sockets in a temporary directory (the daemon
// integration tests' harness): the daemon panel shows the daemon's agents, GPUs (from the NVML
// stand-in) and open trace windows over the Thrift API, and the sharing panel keeps Apply
// disabled with the daemon's reason while connected.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTabWidget>
#include <QTest>
#include <QtTest/QAbstractItemModelTester>

#include "daemon_client.h"
#include "daemon_models.h"
#include "harness.h"
#include "main_window.h"
#include "panels.h"
#include "session.h"

namespace fleetscope::gui {
namespace {

using namespace std::chrono_literals;
using test_support::ApiClient;
using test_support::Child;
using test_support::DaemonUnderTest;

std::unique_ptr<Child> start_agent(const std::string& socket) {
  return std::make_unique<Child>(std::vector<std::string>{TEST_AGENT, "--socket", socket},
                                 std::vector<std::string>{"FLEETSCOPE_WORKFLOW=gui-job"});
}

TEST(GuiDaemon, PanelShowsAgentsDevicesAndOpenWindowsOfARealDaemon) {
  DaemonUnderTest daemon;
  daemon.start();
  auto agent = start_agent(daemon.agent_socket);
  ASSERT_TRUE(agent->wait_line("registered", 10s));
  // Wait for the device sampler's first ticks (every 100 ms) so the daemon reports its GPUs.
  ApiClient api(daemon.api_socket);
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(50ms)) {
    rpc::DaemonStatus status;
    api->status(status);
    if (status.devices.size() == 2) break;
  }
  // Open a trace window on the agent (long enough to still be open when the GUI asks).
  rpc::TraceRequest request;
  request.__set_pid(agent->pid());
  request.__set_duration_ms(20'000);
  rpc::TraceStarted started;
  api->startTrace(started, request);
  ASSERT_EQ(started.pids.size(), 1u);

  MainWindow window(false);
  EXPECT_FALSE(window.sharing_panel()->apply_button()->isEnabled());
  EXPECT_TRUE(window.sharing_panel()->apply_reason()->text().contains("no daemon connected"));
  ASSERT_TRUE(window.connect_to_daemon(QString::fromStdString(daemon.api_socket)))
      << window.last_error().toStdString();
  EXPECT_EQ(window.tabs()->currentWidget(), window.daemon_panel());

  DaemonPanel* panel = window.daemon_panel();
  QAbstractItemModelTester agents_tester(panel->agents_model(),
                                         QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester devices_tester(panel->devices_model(),
                                          QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester windows_tester(panel->windows_model(),
                                          QAbstractItemModelTester::FailureReportingMode::Fatal);
  const auto* agents = panel->agents_model();
  ASSERT_EQ(agents->rowCount(), 1);
  EXPECT_EQ(agents->index(0, DaemonAgentsModel::pid).data().toInt(), agent->pid());
  EXPECT_EQ(agents->index(0, DaemonAgentsModel::uid).data().toInt(), int(getuid()));
  EXPECT_EQ(agents->index(0, DaemonAgentsModel::workflow).data().toString(), "gui-job (env)");
  EXPECT_EQ(agents->index(0, DaemonAgentsModel::open_capture).data().toLongLong(),
            started.capture_id);
  const auto* devices = panel->devices_model();
  ASSERT_EQ(devices->rowCount(), 2);  // the NVML stand-in's default
  EXPECT_EQ(devices->index(1, DaemonDevicesModel::name).data().toString(), "Stand-in GPU 1");
  const auto* windows = panel->windows_model();
  ASSERT_EQ(windows->rowCount(), 1);
  EXPECT_EQ(windows->index(0, DaemonWindowsModel::capture).data().toLongLong(), started.capture_id);
  EXPECT_EQ(windows->index(0, DaemonWindowsModel::pids).data().toString(),
            QString::number(agent->pid()));
  const QString summary = panel->summary()->text();
  EXPECT_TRUE(summary.contains(QString::fromStdString(daemon.database))) << summary.toStdString();
  EXPECT_TRUE(summary.contains("1 agent(s), 2 GPU(s), 1 open trace window(s)"))
      << summary.toStdString();

  // Connected, but nothing analysed: no plan to apply yet.
  EXPECT_FALSE(window.sharing_panel()->apply_button()->isEnabled());
  EXPECT_EQ(window.sharing_panel()->apply_reason()->text(), "No plan to apply.");

  // A plan of two jobs that leave their GPUs mostly idle: Apply hands it to the daemon's sharing
  // service, which records it in lane_plans (what `fleetscope share status` shows).
  auto sharing = std::make_shared<SharingState>();
  for (const char* workflow : {"wa", "wb"}) {
    sharer::JobProfile job;
    job.job_id = std::string(workflow) + "@host.db#capture1/gpu0";
    job.workflow = workflow;
    job.gpu = std::string("host.db#capture1/gpu") + (workflow[1] == 'a' ? "0" : "1");
    job.persistent_bytes = int64_t{4} << 30;
    job.ephemeral_peak_bytes = int64_t{2} << 30;
    job.gpu_capacity_bytes = int64_t{80} << 30;
    job.utilization = 0.2;
    job.iteration_ns = 10'000'000;
    sharing->jobs.push_back(job);
  }
  sharing->options.max_slowdown = 3;
  sharing->plan = sharer::plan_consolidation(sharing->jobs, sharing->options);
  window.sharing_panel()->set_state(sharing);
  ASSERT_TRUE(window.sharing_panel()->apply_button()->isEnabled())
      << window.sharing_panel()->apply_reason()->text().toStdString();
  // Apply asks first, listing what will change; Cancel sends nothing.
  SharingPanel* sharing_panel = window.sharing_panel();
  QTest::mouseClick(sharing_panel->apply_button(), Qt::LeftButton);
  ASSERT_TRUE(sharing_panel->confirmation());
  EXPECT_TRUE(sharing_panel->confirmation()->informativeText().contains("lane"))
      << sharing_panel->confirmation()->informativeText().toStdString();
  QTest::mouseClick(sharing_panel->confirmation()->button(QMessageBox::Cancel), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !sharing_panel->confirmation(); }));
  EXPECT_TRUE(sharing_panel->apply_reason()->text().startsWith("Apply cancelled"));
  {
    rpc::ShareStatus none;
    api->shareStatus(none);
    EXPECT_TRUE(none.plans.empty());
  }
  // A plan naming a GPU this host does not have is refused before any question.
  auto elsewhere = std::make_shared<SharingState>(*sharing);
  elsewhere->plan.gpus.front().gpu = "other.db#capture1/gpu5 (A100)";
  sharing_panel->set_state(elsewhere);
  QTest::mouseClick(sharing_panel->apply_button(), Qt::LeftButton);
  EXPECT_FALSE(sharing_panel->confirmation());
  EXPECT_TRUE(sharing_panel->apply_reason()->text().contains("is not a GPU of"))
      << sharing_panel->apply_reason()->text().toStdString();
  // Confirmed: the plan goes to the daemon with the turn policy it was made for (share plan
  // --policy srtf; share apply hands that policy over, never another).
  auto srtf = std::make_shared<SharingState>(*sharing);
  srtf->options.turn_order = sharer::TurnOrder::kSrtf;
  srtf->plan = sharer::plan_consolidation(srtf->jobs, srtf->options);
  sharing_panel->set_state(srtf);
  ASSERT_EQ(sharing_panel->turn_policy(), "srtf");
  EXPECT_EQ(sharing_panel->policy()->currentText(), "srtf");  // the control shows the plan's
  QTest::mouseClick(sharing_panel->apply_button(), Qt::LeftButton);
  ASSERT_TRUE(sharing_panel->confirmation());
  EXPECT_TRUE(sharing_panel->confirmation()->text().contains("srtf policy"))
      << sharing_panel->confirmation()->text().toStdString();
  QPushButton* confirm = nullptr;
  for (QAbstractButton* b : sharing_panel->confirmation()->buttons())
    if (b->text() == "Apply") confirm = qobject_cast<QPushButton*>(b);
  ASSERT_NE(confirm, nullptr);
  QTest::mouseClick(confirm, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !sharing_panel->confirmation(); }));
  EXPECT_TRUE(window.sharing_panel()->apply_reason()->text().startsWith("Plan 1 applied"))
      << window.sharing_panel()->apply_reason()->text().toStdString();
  rpc::ShareStatus share;
  api->shareStatus(share);
  ASSERT_EQ(share.plans.size(), 1u);
  EXPECT_TRUE(share.plans[0].active);
  EXPECT_EQ(share.plans[0].workflows, (std::vector<std::string>{"wa", "wb"}));
  EXPECT_EQ(share.plans[0].policy, "srtf");
  window.sharing_panel()->set_state(nullptr);

  // The daemon goes away: Refresh says it cannot be reached and empties the tables.
  agent.reset();
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_FALSE(panel->refresh());
  EXPECT_TRUE(panel->summary()->text().contains("cannot reach fleetscoped"))
      << panel->summary()->text().toStdString();
  EXPECT_EQ(panel->agents_model()->rowCount(), 0);
  EXPECT_EQ(panel->devices_model()->rowCount(), 0);
}

TEST(GuiDaemon, ConnectingToANonexistentSocketNamesItAndStaysDisconnected) {
  test_support::TempDir dir;
  const std::string socket = dir.file("missing.sock");
  MainWindow window(false);
  EXPECT_FALSE(window.connect_to_daemon(QString::fromStdString(socket)));
  EXPECT_TRUE(window.last_error().startsWith(QString::fromStdString(socket)))
      << window.last_error().toStdString();
  EXPECT_TRUE(window.last_error().contains("cannot reach fleetscoped"));
  EXPECT_TRUE(window.sharing_panel()->apply_reason()->text().contains("no daemon connected"));
  std::string error;
  DaemonClient client;
  EXPECT_FALSE(client.status(error));
  EXPECT_EQ(error, kNoDaemonReason);
}

}  // namespace
}  // namespace fleetscope::gui
