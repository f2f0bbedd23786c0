#include "fleetscope/lanes/gate_arbiter.h"

#include <gtest/gtest.h>

#include "fleetscope/lanes/gate_protocol.h"
#include "fleetscope/lanes/step_range_names.h"

namespace fleetscope::lanes {
namespace {

std::vector<uint64_t> one(uint64_t member) {
  return {member};
}

// A holder plus three waiters queued in order; returns the order the waiters get the turn when
// each hands it back as soon as it has it.
std::vector<uint64_t> grant_order(GateArbiter& arbiter, const std::vector<uint64_t>& waiters,
                                  const std::vector<uint64_t>& remaining, uint64_t holder) {
  for (size_t i = 0; i < waiters.size(); ++i)
    EXPECT_TRUE(arbiter.request_turn(waiters[i], remaining[i]).empty());
  std::vector<uint64_t> order;
  auto granted = arbiter.leave(holder);
  while (!granted.empty()) {
    order.push_back(granted[0]);
    granted = arbiter.leave(granted[0]);
  }
  return order;
}

TEST(GateArbiter, FirstRequestInAnEmptyLaneIsGrantedAtOnce) {
  GateArbiter arbiter;
  uint64_t a = arbiter.join("l", 100, 0);
  EXPECT_EQ(arbiter.request_turn(a, 0), one(a));
  EXPECT_EQ(arbiter.holder("l"), a);
  // Alone, a yield comes straight back.
  EXPECT_EQ(arbiter.request_turn(a, 0), one(a));
}

TEST(GateArbiter, FifoRotatesAtEachBoundary) {
  GateArbiter arbiter("fifo");
  uint64_t a = arbiter.join("l", 1, 0), b = arbiter.join("l", 2, 0);
  EXPECT_EQ(arbiter.request_turn(a, 0), one(a));
  EXPECT_TRUE(arbiter.request_turn(b, 0).empty());
  EXPECT_EQ(arbiter.request_turn(a, 0), one(b));
  EXPECT_EQ(arbiter.request_turn(b, 0), one(a));
  EXPECT_EQ(arbiter.waiting("l"), 1u);
}

TEST(GateArbiter, PoliciesOrderWaitingMembers) {
  for (auto [policy, expected_order] : std::vector<std::pair<std::string, std::vector<int>>>{
           {"fifo", {0, 1, 2}}, {"srtf", {2, 0, 1}}, {"priority", {1, 2, 0}}}) {
    GateArbiter arbiter(policy);
    uint64_t holder = arbiter.join("l", 1, 0);
    ASSERT_EQ(arbiter.request_turn(holder, 0), one(holder));
    std::vector<uint64_t> waiters{arbiter.join("l", 2, 1), arbiter.join("l", 3, 9),
                                  arbiter.join("l", 4, 5)};
    auto order = grant_order(arbiter, waiters, {500, 0, 100}, holder);
    ASSERT_EQ(order.size(), 3u) << policy;
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(order[i], waiters[expected_order[i]]) << policy << " position " << i;
  }
}

TEST(TurnPolicy, EveryListedNameMakesThatPolicyAndNoOther) {
  const auto names = turn_policy_names();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names.front(), "fifo");  // the default comes first
  for (std::string_view name : names) {
    auto policy = make_turn_policy(name);
    ASSERT_TRUE(policy) << name;
    EXPECT_EQ(policy->name(), name);
  }
  EXPECT_FALSE(make_turn_policy("pack"));  // a simulator policy, not a lane's turn policy
}

TEST(GateArbiter, LanesAreIndependentAndReleaseDoesNotRequeue) {
  GateArbiter arbiter;
  ASSERT_TRUE(arbiter.set_lane_policy("x", "srtf"));
  EXPECT_FALSE(arbiter.set_lane_policy("x", "lottery"));
  uint64_t a = arbiter.join("x", 1, 0), b = arbiter.join("y", 2, 0);
  EXPECT_EQ(arbiter.request_turn(a, 0), one(a));
  EXPECT_EQ(arbiter.request_turn(b, 0), one(b));  // another lane: granted in parallel
  EXPECT_TRUE(arbiter.release(a).empty());
  EXPECT_FALSE(arbiter.holder("x").has_value());
  EXPECT_EQ(arbiter.waiting("x"), 0u);
  auto events = arbiter.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, GateEventKind::kReleased);
  EXPECT_EQ(events.back().pid, 1);
  EXPECT_EQ(gate_event_name(GateEventKind::kGranted), "granted");
  // A poller's cursor: only what came after it, in order, with monotonic times.
  auto later = arbiter.events_since(events[events.size() - 3].sequence);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[1].sequence, events.back().sequence);
  EXPECT_LE(later[0].monotonic_ns, later[1].monotonic_ns);
  EXPECT_GT(later[0].monotonic_ns, 0);
  EXPECT_TRUE(arbiter.events_since(events.back().sequence).empty());
}

TEST(GateProtocol, LinesRoundTrip) {
  std::string error;
  GateHello hello{"lane-1", 4242, -7};
  std::string line = format_hello(hello);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  auto parsed = parse_hello(line, &error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_EQ(parsed->lane_id, "lane-1");
  EXPECT_EQ(parsed->pid, 4242);
  EXPECT_EQ(parsed->priority, -7);
  auto next = parse_request("NEXT 123456789", &error);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->kind, GateRequestKind::kNext);
  EXPECT_EQ(next->remaining_ns, 123456789u);
  EXPECT_EQ(parse_request("RELEASE", &error)->kind, GateRequestKind::kRelease);
}

TEST(GateProtocol, MalformedLinesAreRejectedWithTheReason) {
  std::string error;
  EXPECT_FALSE(parse_hello("HELLO 2 lane 1 0", &error));
  EXPECT_NE(error.find("unsupported protocol version '2'"), std::string::npos);
  EXPECT_FALSE(parse_hello("HELLO 1 ../x 1 0", &error));
  EXPECT_NE(error.find("invalid lane id"), std::string::npos);
  EXPECT_FALSE(parse_hello("HELLO 1 lane -5 0", &error));
  EXPECT_FALSE(parse_hello("HELLO 1 lane 5", &error));
  EXPECT_FALSE(parse_request("NEXT", &error));
  EXPECT_FALSE(parse_request("NEXT 12x", &error));
  EXPECT_FALSE(parse_request("GO", &error));
  EXPECT_NE(error.find("got 'GO'"), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::lanes

namespace fleetscope::lanes {
namespace {

TEST(StepRangeNames, DefaultsFollowPyTorchAndTheAgent) {
  StepRangeNames names;
  EXPECT_TRUE(names.matches("ProfilerStep#12"));
  EXPECT_TRUE(names.matches("step"));
  EXPECT_FALSE(names.matches("ProfilerStep#"));
  EXPECT_FALSE(names.matches("ProfilerStep#1x"));
  EXPECT_FALSE(names.matches("steps"));
  EXPECT_FALSE(names.matches(nullptr));
}

TEST(StepRangeNames, CustomListReplacesTheDefaults) {
  StepRangeNames names(" train_iter , it# ");
  EXPECT_TRUE(names.matches("train_iter"));
  EXPECT_TRUE(names.matches("it#3"));
  EXPECT_FALSE(names.matches("step"));
  EXPECT_EQ(StepRangeNames("").entries(), StepRangeNames().entries());
}

}  // namespace
}  // namespace fleetscope::lanes
