#include "fleetscope/sharer/turn_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "fleetscope/lanes/turn_policy.h"
#include "stretched_lane.h"

namespace fleetscope::sharer {

namespace {

std::optional<std::string> label_of(const JobProfile& job, const char* name) {
  auto label = job.labels.find(name);
  if (label == job.labels.end()) return std::nullopt;
  return label->second;
}

// Whether member j takes the turn before member i may (j goes first, or a tie that does not
// alternate).
bool goes_before(const TurnRank& j, const TurnRank& i) {
  return j.key < i.key || (j.key == i.key && !(j.round_robin_ties && i.round_robin_ties));
}

}  // namespace

std::optional<TurnOrder> turn_order_named(std::string_view name) {
  // One list of names: the arbiter's (lanes::make_turn_policy accepts exactly these).
  if (!lanes::make_turn_policy(name)) return std::nullopt;
  if (name == "srtf") return TurnOrder::kSrtf;
  if (name == "priority") return TurnOrder::kPriority;
  return TurnOrder::kFifo;
}

std::string turn_order_name(TurnOrder order) {
  switch (order) {
    case TurnOrder::kSrtf:
      return "srtf";
    case TurnOrder::kPriority:
      return "priority";
    case TurnOrder::kFifo:
      break;
  }
  return "fifo";
}

std::vector<std::string> turn_order_names() {
  std::vector<std::string> names;
  for (std::string_view name : lanes::turn_policy_names()) names.emplace_back(name);
  return names;
}

std::string turn_order_model(TurnOrder order) {
  switch (order) {
    case TurnOrder::kSrtf:
      return "srtf: the member with the least remaining time (steps label x iteration time) takes "
             "every turn it is ready for, members without steps go last and alternate; a job "
             "waits for the lane's busy period of shorter jobs plus one GPU phase of a longer one";
    case TurnOrder::kPriority:
      return "priority: the member with the highest priority label takes every turn it is ready "
             "for, equal priorities alternate; a job waits for the lane's busy period of "
             "higher-priority jobs plus one GPU phase of a lower one";
    case TurnOrder::kFifo:
      break;
  }
  return "fifo: members alternate at iteration boundaries (round robin, as Salus); a job waits "
         "at most one GPU phase of every lane mate";
}

int turn_priority(const JobProfile& job) {
  const auto text = label_of(job, "priority");
  if (!text) return 0;
  int value = 0;
  const char* end = text->data() + text->size();
  const auto [last, error] = std::from_chars(text->data(), end, value);
  // The arbiter refuses a FLEETSCOPE_JOB_PRIORITY that is not an integer; a label such as
  // "high" only marks the job latency-sensitive and orders it as the default, 0.
  return error == std::errc() && last == end ? value : 0;
}

std::optional<double> turn_steps(const JobProfile& job) {
  const auto text = label_of(job, "steps");
  if (!text) return std::nullopt;
  try {
    size_t used = 0;
    const double steps = std::stod(*text, &used);
    if (used == text->size() && std::isfinite(steps) && steps > 0) return steps;
  } catch (const std::exception&) {
    // Unreadable: unknown, as a job without FLEETSCOPE_JOB_STEPS.
  }
  return std::nullopt;
}

TurnRank turn_rank(const JobProfile& job, TurnOrder order, double iteration_s) {
  switch (order) {
    case TurnOrder::kPriority:
      return {-static_cast<double>(turn_priority(job)), true};
    case TurnOrder::kSrtf: {
      const auto steps = turn_steps(job);
      if (!steps) return {std::numeric_limits<double>::infinity(), true};
      return {*steps * iteration_s, false};
    }
    case TurnOrder::kFifo:
      break;
  }
  return {0, true};
}

double ordered_time_sharing(const std::vector<LaneMember>& members,
                            const std::vector<TurnRank>& ranks, size_t index, double parallel,
                            bool estimate) {
  const bool all_alternate = ranks.size() != members.size() ||
                             std::all_of(ranks.begin(), ranks.end(), [&](const TurnRank& rank) {
                               return rank.round_robin_ties && rank.key == ranks.front().key;
                             });
  if (all_alternate) return contended_time_sharing(members, index, parallel, estimate);
  if (index >= members.size() || members[index].iteration_s <= 0) return parallel;
  const std::vector<LaneMember> stretched = stretch_gpu_phases(members, parallel);
  const auto gpu_phase = [&](size_t j) {
    return stretched[j].utilization * stretched[j].iteration_s;
  };
  double blocking = 0;     // one GPU phase of a member that goes after it, already started
  double alternating = 0;  // one GPU phase of each member it alternates with
  double before_load = 0;  // GPU share of the members that go before it, at their fastest
  std::vector<size_t> before;
  for (size_t j = 0; j < members.size(); ++j) {
    if (j == index) continue;
    if (goes_before(ranks[j], ranks[index])) {
      before.push_back(j);
      before_load += stretched[j].utilization;
    } else if (ranks[j].key == ranks[index].key) {
      alternating += gpu_phase(j);
    } else {
      blocking = std::max(blocking, gpu_phase(j));
    }
  }
  constexpr double kInfinite = std::numeric_limits<double>::infinity();
  if (before_load >= 1.0) return kInfinite;  // it may never get the lane
  // The busy period: the smallest w with w = blocking + alternating + sum_h (floor(w / t_h) + 1)
  // g_h, from below (each step only grows w; the load below one bounds it).
  double wait = blocking + alternating;
  for (size_t h : before) wait += gpu_phase(h);
  bool settled = false;
  for (int step = 0; step < 1000 && !settled; ++step) {
    double next = blocking + alternating;
    for (size_t h : before) {
      if (stretched[h].iteration_s > 0)
        next += (std::floor(wait / stretched[h].iteration_s) + 1.0) * gpu_phase(h);
    }
    settled = next <= wait;
    wait = std::max(wait, next);
  }
  // Not settled in 1000 steps: a load just below one; no bound worth planning with.
  if (!settled) return kInfinite;
  const double own = stretched[index].iteration_s;
  const double worst = (own + wait) / members[index].iteration_s;
  if (!estimate) return worst;
  const double fluid = std::max(own, (gpu_phase(index) + alternating) / (1.0 - before_load)) /
                       members[index].iteration_s;
  return 0.5 * (fluid + worst);
}

}  // namespace fleetscope::sharer
