#pragma once
// The lanes' turn policy as the planner predicts it. Inside a lane the iteration gate's arbiter
// (lanes/turn_policy.h) hands the next turn, at an iteration boundary, to the waiting member its
// policy picks; a GPU phase in flight is never preempted. The planner orders a lane's members the
// way the arbiter will and bounds each member's wait for the lane as non-preemptive fixed-priority
// scheduling does (the level-i busy period of non-preemptive response-time analysis: Davis, Burns,
// Bril & Lukkien, "Controller Area Network (CAN) schedulability analysis", Real-Time Systems 35,
// 2007), each job being one task whose next GPU phase comes at the earliest one iteration after the
// previous one started:
//  - members that go before it (higher priority; for srtf, less remaining time) may take the turn
//    again and again while it waits: ceil-style interference sum_h (floor(w / t_h) + 1) g_h;
//  - members that alternate with it (fifo; equal priorities; srtf's unknown remaining times: ties
//    by arrival at the arbiter) go at most once each: sum g_e;
//  - members that go after it hold the lane at most once, with a GPU phase already started:
//    max g_l (blocking).
// Under fifo every member alternates with every other, and the bound is the round-robin one of
// time_sharing_slowdown (interference.h), which ordered_time_sharing then returns unchanged.
// The simulator runs the same orders (policy.h: PackPolicy, SrtfPolicy, PriorityPolicy) and
// replay_plan checks a plan's predictions against it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetscope/sharer/interference.h"
#include "fleetscope/sharer/job_profile.h"

namespace fleetscope::sharer {

enum class TurnOrder { kFifo, kSrtf, kPriority };

// "fifo", "srtf" or "priority" (the names of lanes::make_turn_policy); nullopt for any other.
std::optional<TurnOrder> turn_order_named(std::string_view name);
std::string turn_order_name(TurnOrder order);
// The names, fifo (the default) first.
std::vector<std::string> turn_order_names();
// What the planner assumes of the order, in one line (the CLI's table and the GUI print it).
std::string turn_order_model(TurnOrder order);

// A member's place in its lane's turn order: lower keys take the turn first.
struct TurnRank {
  double key = 0;
  // Equal keys alternate (ties by arrival at the arbiter): fifo, equal priorities, srtf's unknown
  // remaining times. false: either may keep the turn (srtf's equal remaining times: the one that
  // ran has less remaining afterwards).
  bool round_robin_ties = true;
};
// From the job's labels: priority (an integer, the job's FLEETSCOPE_JOB_PRIORITY; higher first;
// anything else counts as 0, the arbiter's default) and steps (the iterations it has to run, its
// FLEETSCOPE_JOB_STEPS; srtf's remaining time = steps x iteration time; none: unknown, last).
TurnRank turn_rank(const JobProfile& job, TurnOrder order, double iteration_s);
// The integer priority label (0 without one), and the steps label (nullopt without a positive one).
int turn_priority(const JobProfile& job);
std::optional<double> turn_steps(const JobProfile& job);

// contended_time_sharing (interference.h) under a turn order: the slowdown of members[index] whose
// lane's GPU phases are stretched by `parallel`, worst case (the busy-period bound above) or the
// estimate (the mean of that bound and the fluid period max(t_i, (g_i + sum_e g_e) / (1 - sum_h
// u_h)), as time_sharing_estimate takes the mean of the round-robin bound and its fluid period).
// Infinite when the members that go before it can keep the lane busy for good (sum_h u_h >= 1).
// With every member alternating (fifo) it is contended_time_sharing.
double ordered_time_sharing(const std::vector<LaneMember>& members,
                            const std::vector<TurnRank>& ranks, size_t index, double parallel,
                            bool estimate);

}  // namespace fleetscope::sharer
