#include <gtest/gtest.h>

#include <thread>

#include "fleetscope/daemon/registry.h"

namespace fleetscope::daemon {
namespace {

using namespace std::chrono_literals;

rpc::AgentHello hello(int pid, std::vector<int> chain, std::string workflow) {
  rpc::AgentHello h;
  h.pid = pid;
  h.parent_chain = std::move(chain);
  h.workflow = std::move(workflow);
  h.workflow_source = "env";
  return h;
}

TEST(Registry, AnAgentRegistersOnlyItsOwnProcess) {
  Registry registry;
  EXPECT_THROW(registry.add(hello(200, {}, "w"), Caller{201, 1000}, 0), rpc::InvalidRequest);
  EXPECT_THROW(registry.add(hello(200, {}, ""), Caller{200, 1000}, 0), rpc::InvalidRequest);
  auto entry = registry.add(hello(200, {100}, "w"), Caller{200, 1000}, 5);
  EXPECT_EQ(entry.uid, 1000u);  // the kernel's uid, not a claim
  EXPECT_EQ(entry.registered_ns, 5);
  EXPECT_EQ(registry.size(), 1u);
}

TEST(Registry, ProcessTreeWorkflowAndPidAttribution) {
  Registry registry;
  registry.add(hello(100, {1}, "job"), Caller{100, 1}, 0);
  registry.add(hello(101, {100}, "job"), Caller{101, 1}, 0);
  registry.add(hello(102, {101, 100}, "job"), Caller{102, 1}, 0);
  registry.add(hello(300, {}, "other"), Caller{300, 2}, 0);
  EXPECT_EQ(registry.in_tree_of(100).size(), 3u);
  EXPECT_EQ(registry.in_tree_of(101).size(), 2u);
  EXPECT_EQ(registry.in_tree_of(300).size(), 1u);
  EXPECT_TRUE(registry.in_tree_of(999).empty());
  EXPECT_EQ(registry.of_workflow("job").size(), 3u);
  EXPECT_EQ(registry.workflow_of_pid(102), "job");
  EXPECT_EQ(registry.workflow_of_pid(1), "job");  // an unregistered ancestor of a job process
  EXPECT_EQ(registry.workflow_of_pid(999), std::nullopt);
}

TEST(Registry, ReRegistrationReplacesTheOldEntry) {
  Registry registry;
  auto first = registry.add(hello(100, {}, "job"), Caller{100, 1}, 0);
  auto second = registry.add(hello(100, {}, "job"), Caller{100, 1}, 0);
  EXPECT_NE(first.id, second.id);
  EXPECT_EQ(registry.size(), 1u);
  EXPECT_FALSE(registry.get(first.id));
}

TEST(Registry, OrdersReachAWaitingPollAndRemovalWakesIt) {
  Registry registry;
  auto agent = registry.add(hello(100, {}, "job"), Caller{100, 1}, 0);
  EXPECT_EQ(registry.await(agent.id, 10ms).kind, rpc::AgentOrderKind::NOTHING);
  // Each helper thread acts once the test thread is inside await() (polling() says so).
  auto until_polling = [&] {
    while (!registry.polling(agent.id)) std::this_thread::yield();
  };
  std::thread poster([&] {
    until_polling();
    rpc::AgentOrder order;
    order.kind = rpc::AgentOrderKind::OPEN_WINDOW;
    order.__set_capture_id(4);
    registry.post(agent.id, order);
  });
  auto order = registry.await(agent.id, 5s);
  poster.join();
  EXPECT_FALSE(registry.polling(agent.id));
  EXPECT_EQ(order.kind, rpc::AgentOrderKind::OPEN_WINDOW);
  EXPECT_EQ(order.capture_id, 4);
  auto start = std::chrono::steady_clock::now();
  std::thread remover([&] {
    until_polling();
    registry.remove(agent.id);
  });
  EXPECT_EQ(registry.await(agent.id, 5s).kind, rpc::AgentOrderKind::NOTHING);
  remover.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_FALSE(registry.post(agent.id, order));
}

}  // namespace
}  // namespace fleetscope::daemon
