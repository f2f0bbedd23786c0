// The SQL console runs its query on a worker thread: the window keeps processing events while it
// runs, the timeout and the Cancel button interrupt it, and a newer query supersedes an older one.
#include <gtest/gtest.h>

#include <QLabel>
#include <QPushButton>
#include <QTest>
#include <QTimer>
#include <optional>

#include "capture_view.h"
#include "fleetscope/store/writer.h"
#include "gui_fixture.h"
#include "main_window.h"
#include "panels.h"
#include "temp_dir.h"
#include "timeline_widget.h"

namespace fleetscope::gui {
namespace {

// Counts forever: only an interrupt ends it.
const char* kEndless =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

class ConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("trace.db");
    testing::write_fixture(path_);
    window_ = std::make_unique<MainWindow>(false);
    window_->resize(1200, 800);
    window_->show();
    window_->open(QString::fromStdString(path_));
    ASSERT_TRUE(window_->wait_loaded());
    window_->show_view("sql");
    console_ = window_->sql_console();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !console_->running(); }, 10000));
  }
  test_support::TempDir dir_;
  std::string path_;
  std::unique_ptr<MainWindow> window_;
  SqlConsole* console_ = nullptr;
};

TEST_F(ConsoleTest, AnEndlessQueryTimesOutWhileTheWindowKeepsResponding) {
  console_->set_timeout_ms(300);
  console_->start(kEndless);
  ASSERT_TRUE(console_->running());
  // The GUI thread is free: timers fire and events are processed while the query runs.
  int ticks = 0;
  QTimer tick;
  QObject::connect(&tick, &QTimer::timeout, [&] { ++ticks; });
  tick.start(20);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !console_->running(); }, 10000));
  EXPECT_GE(ticks, 5);
  EXPECT_TRUE(console_->error().contains("timed out after 0.3 s"))
      << console_->error().toStdString();
  // The console works again afterwards.
  EXPECT_TRUE(console_->run("SELECT COUNT(*) FROM StringIds"));
  EXPECT_EQ(console_->model()->rowCount(), 1);
}

TEST_F(ConsoleTest, CancelInterruptsTheRunningQuery) {
  console_->set_timeout_ms(60'000);
  QTest::mouseClick(console_->run_button(), Qt::LeftButton);  // the example query: quick
  ASSERT_TRUE(QTest::qWaitFor([&] { return !console_->running(); }, 10000));
  EXPECT_TRUE(console_->error().isEmpty());
  console_->start(kEndless);
  ASSERT_TRUE(console_->cancel_button()->isEnabled());
  QTest::qWait(50);
  QTest::mouseClick(console_->cancel_button(), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !console_->running(); }, 10000));
  EXPECT_EQ(console_->error(), "Error: cancelled");
  EXPECT_FALSE(console_->cancel_button()->isEnabled());
}

// Another process holds the database locked (a writer's exclusive transaction): the console's
// connection waits for it on the worker, not on the GUI thread, which froze the window for up to
// the store's busy timeout (5 s; an older schema's copy to migrate took longer) and, when a file
// opened, delayed the timeline's first paint behind the example query's connection.
TEST_F(ConsoleTest, ALockedDatabaseLeavesTheWindowRespondingUntilItIsFree) {
  console_->set_timeout_ms(60'000);
  std::optional<store::Database> holder = store::Database::open(path_, store::OpenMode::read_write);
  holder->exec("PRAGMA locking_mode = EXCLUSIVE");
  holder->exec("BEGIN EXCLUSIVE");
  QTest::mouseClick(console_->run_button(), Qt::LeftButton);
  // The click came back at once: the query is running and the window handles events meanwhile.
  EXPECT_TRUE(console_->running());
  EXPECT_EQ(console_->status()->text(), "Running…");
  bool ticked = false;
  QTimer::singleShot(0, [&] { ticked = true; });
  ASSERT_TRUE(QTest::qWaitFor([&] { return ticked; }, 2000));
  EXPECT_TRUE(console_->running());
  // The writer ends: the query gets its connection and answers.
  holder->exec("ROLLBACK");
  holder.reset();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !console_->running(); }, 10000));
  EXPECT_TRUE(console_->error().isEmpty()) << console_->error().toStdString();
  EXPECT_GT(console_->model()->rowCount(), 0);
}

TEST_F(ConsoleTest, ANewerQuerySupersedesARunningOne) {
  console_->set_timeout_ms(60'000);
  console_->start(kEndless);
  EXPECT_TRUE(console_->run("SELECT 42"));
  ASSERT_EQ(console_->model()->rowCount(), 1);
  EXPECT_EQ(console_->model()->index(0, 0).data().toString(), "42");
}

TEST(EmptyDatabase, SaysItHasNoCaptures) {
  test_support::TempDir dir;
  const std::string path = dir.file("empty.db");
  store::Writer(store::Database::create(path)).finish();
  MainWindow window(false);
  window.resize(1000, 700);
  window.show();
  window.open(QString::fromStdString(path));
  ASSERT_TRUE(window.wait_loaded());
  EXPECT_TRUE(window.last_error().isEmpty()) << window.last_error().toStdString();
  EXPECT_EQ(window.capture_view()->timeline()->placeholder(),
            "empty.db has no captures: it holds no recorded tracing window to show.");
}

}  // namespace
}  // namespace fleetscope::gui
