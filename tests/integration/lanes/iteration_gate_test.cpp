// The iteration gate end to end: an arbiter (GateArbiter + GateServer) in the test process, jobs
// (lane_member with the interposition library preloaded) calling fleetscope_step().

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "fleetscope/lanes/gate_arbiter.h"
#include "fleetscope/lanes/gate_server.h"
#include "member_process.h"
#include "temp_dir.h"

namespace fleetscope::lanes {
namespace {

using test_support::MemberProcess;

class IterationGateTest : public ::testing::Test {
 protected:
  void start_arbiter(std::string_view policy) {
    arbiter_ = std::make_unique<GateArbiter>(policy);
    server_ = std::make_unique<GateServer>(*arbiter_, dir_.file("gate.sock"));
    std::string error;
    ASSERT_TRUE(server_->start(&error)) << error;
  }
  std::map<std::string, std::string> env(int priority = 0) const {
    std::map<std::string, std::string> env{{"LD_PRELOAD", FLEETSCOPE_LANES_LIBRARY},
                                           {"LD_LIBRARY_PATH", FLEETSCOPE_STAND_IN_DIR},
                                           {"FLEETSCOPE_GATE_SOCKET", dir_.file("gate.sock")},
                                           {"FLEETSCOPE_JOB_PRIORITY", std::to_string(priority)}};
    env.merge(test_support::granted_lane(dir_.path().string(), "gate", 0));
    return env;
  }
  std::unique_ptr<MemberProcess> member(const std::vector<std::string>& commands,
                                        int priority = 0) const {
    std::vector<std::string> arguments{"dlsym"};
    arguments.insert(arguments.end(), commands.begin(), commands.end());
    return std::make_unique<MemberProcess>(FLEETSCOPE_LANE_MEMBER, arguments, env(priority));
  }
  // Waits until `count` members wait for the lane's turn.
  bool wait_for_waiting(size_t count) const {
    for (int i = 0; i < 1000; ++i) {
      if (arbiter_->waiting("gate") == count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  std::vector<pid_t> granted_pids() const {
    std::vector<pid_t> pids;
    for (const auto& event : arbiter_->events()) {
      if (event.kind == GateEventKind::kGranted) pids.push_back(event.pid);
    }
    return pids;
  }

  // A holder and three waiters queued in the order given; returns the waiters' grant order.
  std::vector<pid_t> turn_order(const std::vector<int>& waiter_priorities,
                                std::vector<pid_t>* waiter_pids) {
    auto holder = member({"step", "holder", "wait", "step", "holder-again"});
    EXPECT_EQ(holder->read_line(), "turn holder");
    std::vector<std::unique_ptr<MemberProcess>> waiters;
    for (size_t i = 0; i < waiter_priorities.size(); ++i) {
      waiters.push_back(member({"step", "waiter"}, waiter_priorities[i]));
      waiter_pids->push_back(waiters.back()->pid());
      EXPECT_TRUE(wait_for_waiting(i + 1));  // queue them in a known order
    }
    holder->write_line("yield");  // the holder reaches its next boundary: a handover
    for (auto& waiter : waiters) EXPECT_EQ(waiter->read_line(), "turn waiter");
    EXPECT_EQ(holder->read_line(), "continued");
    EXPECT_EQ(holder->read_line(), "turn holder-again");
    auto grants = granted_pids();
    grants.erase(grants.begin());  // the holder's first turn
    return grants;
  }

  test_support::TempDir dir_;
  std::unique_ptr<GateArbiter> arbiter_;
  std::unique_ptr<GateServer> server_;
};

TEST_F(IterationGateTest, FifoGrantsTurnsInArrivalOrder) {
  start_arbiter("fifo");
  std::vector<pid_t> waiters;
  auto grants = turn_order({0, 0, 0}, &waiters);
  ASSERT_EQ(grants.size(), 4u);
  EXPECT_EQ(grants[0], waiters[0]);
  EXPECT_EQ(grants[1], waiters[1]);
  EXPECT_EQ(grants[2], waiters[2]);
}

TEST_F(IterationGateTest, PriorityGrantsTurnsHighestFirst) {
  start_arbiter("priority");
  std::vector<pid_t> waiters;
  auto grants = turn_order({1, 5, 3}, &waiters);
  ASSERT_EQ(grants.size(), 4u);
  EXPECT_EQ(grants[0], waiters[1]);
  EXPECT_EQ(grants[1], waiters[2]);
  EXPECT_EQ(grants[2], waiters[0]);
}

TEST_F(IterationGateTest, AloneInTheLaneTheGateNeverTalksToTheArbiterAgain) {
  start_arbiter("fifo");
  auto job = member({"steps", "500", "0", "solo"});
  for (int step = 0; step < 500; ++step)
    ASSERT_EQ(job->read_line(), "turn solo " + std::to_string(step));
  job->wait();
  size_t requests = 0;
  for (const auto& event : arbiter_->events()) requests += event.kind == GateEventKind::kWaiting;
  EXPECT_EQ(requests, 1u);  // the first boundary only
}

TEST_F(IterationGateTest, ContendedLaneAlternatesEveryIteration) {
  start_arbiter("fifo");
  auto first = member({"step", "a", "wait", "steps", "3", "200", "a"});
  ASSERT_EQ(first->read_line(), "turn a");
  auto second = member({"steps", "3", "200", "b"});
  ASSERT_TRUE(wait_for_waiting(1));
  first->write_line("go");
  EXPECT_EQ(first->read_line(), "continued");
  // From here on each boundary hands the turn over: a and b alternate.
  std::vector<pid_t> grants = granted_pids();
  for (int i = 0; i < 100 && grants.size() < 7; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    grants = granted_pids();
  }
  ASSERT_GE(grants.size(), 6u);
  for (size_t i = 1; i + 1 < grants.size(); ++i)
    EXPECT_NE(grants[i], grants[i + 1]) << "grant " << i;
}

TEST_F(IterationGateTest, KilledTurnHolderDoesNotDeadlockTheLane) {
  start_arbiter("fifo");
  auto holder = member({"step", "holder", "wait"});
  ASSERT_EQ(holder->read_line(), "turn holder");
  auto waiter = member({"step", "waiter"});
  ASSERT_TRUE(wait_for_waiting(1));
  holder->kill(SIGKILL);
  holder->wait();
  EXPECT_EQ(waiter->read_line(5000), "turn waiter");
}

TEST_F(IterationGateTest, GatesOpenWhenTheArbiterGoesAway) {
  start_arbiter("fifo");
  auto holder = member({"step", "holder", "wait"});
  ASSERT_EQ(holder->read_line(), "turn holder");
  auto waiter = member({"step", "waiter", "steps", "3", "0", "unshared"});
  ASSERT_TRUE(wait_for_waiting(1));
  server_->stop();
  EXPECT_EQ(waiter->read_line(5000), "turn waiter");
  for (int step = 0; step < 3; ++step)
    EXPECT_EQ(waiter->read_line(5000), "turn unshared " + std::to_string(step));
}

TEST_F(IterationGateTest, NvtxStepRangesAreIterationBoundaries) {
  start_arbiter("fifo");
  auto environment = env();
  environment["NVTX_INJECTION64_PATH"] = FLEETSCOPE_LANES_LIBRARY;
  auto holder = std::make_unique<MemberProcess>(
      FLEETSCOPE_LANE_MEMBER,
      std::vector<std::string>{"dlsym", "nvtx", "step", "wait", "nvtx", "forward", "ready", "wait",
                               "nvtxex", "ProfilerStep#7"},
      environment);
  ASSERT_EQ(holder->read_line(), "nvtx step");  // first boundary: the turn
  auto waiter = std::make_unique<MemberProcess>(
      FLEETSCOPE_LANE_MEMBER, std::vector<std::string>{"dlsym", "nvtx", "ProfilerStep#1"},
      environment);
  ASSERT_TRUE(wait_for_waiting(1));  // an NVTX step range made the waiter queue
  holder->write_line("go");
  EXPECT_EQ(holder->read_line(), "continued");
  EXPECT_EQ(holder->read_line(), "nvtx forward");  // not a step name: no handover
  EXPECT_EQ(holder->read_line(), "ready");
  EXPECT_EQ(arbiter_->waiting("gate"), 1u);
  holder->write_line("go");
  EXPECT_EQ(holder->read_line(), "continued");
  // A domain range with an ASCII "ProfilerStep#7" message hands the turn over.
  EXPECT_EQ(waiter->read_line(), "nvtx ProfilerStep#1");
  EXPECT_EQ(holder->read_line(), "nvtxex ProfilerStep#7");
}

TEST_F(IterationGateTest, NvtxChainsToTheToolAlreadyInjected) {
  start_arbiter("fifo");
  auto environment = env();
  environment["NVTX_INJECTION64_PATH"] =
      FLEETSCOPE_STAND_IN_DIR "/libfleetscope_stand_in_nvtx_tool.so";
  MemberProcess job(FLEETSCOPE_LANE_MEMBER,
                    {"dlsym", "nvtx", "step", "nvtx", "forward", "toolpushes"}, environment);
  EXPECT_EQ(job.read_line(), "nvtx step");
  EXPECT_EQ(job.read_line(), "nvtx forward");
  EXPECT_EQ(job.read_line(), "toolpushes 2");  // the other tool still sees every push
  job.wait();
  size_t requests = 0;
  for (const auto& event : arbiter_->events()) requests += event.kind == GateEventKind::kWaiting;
  EXPECT_EQ(requests, 1u);  // and "step" still reached the gate
}

TEST(IterationGateWithoutArbiter, StepIsANoOpWithoutASocketOrWithoutTheLibrary) {
  test_support::TempDir dir;
  std::map<std::string, std::string> in_lane{
      {"LD_PRELOAD", FLEETSCOPE_LANES_LIBRARY},
      {"LD_LIBRARY_PATH", FLEETSCOPE_STAND_IN_DIR},
      {"FLEETSCOPE_GATE_SOCKET", dir.file("nobody-listens.sock")}};
  in_lane.merge(test_support::granted_lane(dir.path().string(), "nogate", 0));
  MemberProcess unreachable(FLEETSCOPE_LANE_MEMBER, {"dlsym", "steps", "3", "0", "x", "enforcing"},
                            in_lane);
  for (int step = 0; step < 3; ++step)
    EXPECT_EQ(unreachable.read_line(), "turn x " + std::to_string(step));
  EXPECT_EQ(unreachable.read_line(), "enforcing 1");
  MemberProcess plain(FLEETSCOPE_LANE_MEMBER, {"dlsym", "step", "y", "enforcing"},
                      {{"LD_LIBRARY_PATH", FLEETSCOPE_STAND_IN_DIR}});
  EXPECT_EQ(plain.read_line(), "turn y");
  EXPECT_EQ(plain.read_line(), "enforcing absent");
}

}  // namespace
}  // namespace fleetscope::lanes
