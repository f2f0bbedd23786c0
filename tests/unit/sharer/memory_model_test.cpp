// The one memory model (sharer/memory_model.h): the same jobs get the same admission in the
// lane allocator, the planner, the simulator and the daemon's sharing service, the CUDA context
// included; and the host config states the context.
#include "fleetscope/sharer/memory_model.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fleetscope/sharer/host_planning.h"
#include "fleetscope/sharer/lane_allocator.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/sharer/sharing_service.h"
#include "fleetscope/sharer/simulator.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

constexpr int kJobs = 4;

struct Case {
  const char* name;
  int64_t persistent_bytes;
  int64_t ephemeral_bytes;
};

// How many of kJobs identical jobs one 16 GiB GPU takes, asked four ways. `single_lane`: every
// part arranges the jobs in one lane per GPU (Salus's own mode); otherwise the allocator, the
// simulator and the service use Salus's order (a new lane when free memory holds the job, else
// the best-fitting lane, else growth). The planner chooses its own arrangement (the one leaving
// more free memory), so it is compared in single-lane mode, where the arrangement is fixed.
int allocator_admits(const Case& c, const MemoryModel& model, bool single_lane) {
  LaneAllocator gpu(16 * kGiB, model);
  AdmitOptions options;
  if (single_lane) options.max_lanes = 1;
  int admitted = 0;
  for (int job = 0; job < kJobs; ++job)
    admitted += gpu.admit(job, {c.persistent_bytes, c.ephemeral_bytes, -1}, options) ? 1 : 0;
  EXPECT_EQ(gpu.check_invariants(), "");
  return admitted;
}

int planner_admits(const Case& c, const MemoryModel& model) {
  std::vector<JobProfile> jobs(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    jobs[i].job_id = "job" + std::to_string(i);
    jobs[i].gpu = "gpu" + std::to_string(i);
    jobs[i].persistent_bytes = c.persistent_bytes;
    jobs[i].ephemeral_peak_bytes = c.ephemeral_bytes;
    jobs[i].gpu_capacity_bytes = 16 * kGiB;
    jobs[i].utilization = 0.05;
    jobs[i].iteration_ns = 100'000'000;
  }
  PlannerOptions options;
  options.memory = model;
  options.single_lane = true;
  options.max_slowdown = 100;  // memory alone decides
  const auto plan = plan_consolidation(jobs, options);
  size_t most = 0;
  for (const auto& gpu : plan.gpus) {
    size_t here = 0;
    for (const auto& lane : gpu.lanes) here += lane.job_ids.size();
    most = std::max(most, here);
  }
  return static_cast<int>(most);
}

int simulator_admits(const Case& c, const MemoryModel& model, bool single_lane) {
  std::vector<SimJob> jobs(kJobs);
  for (int i = 0; i < kJobs; ++i) {
    jobs[i].id = i;
    jobs[i].name = "job" + std::to_string(i);
    jobs[i].iterations = 100;  // 10 s alone: nobody finishes within the first second
    jobs[i].iteration_s = 0.1;
    jobs[i].utilization = 0.05;
    jobs[i].memory = {c.persistent_bytes, c.ephemeral_bytes, -1};
  }
  SimConfig config;
  config.gpus = 1;
  config.lanes = !single_lane;
  config.memory = model;
  // Admitted jobs start within their lane's first turns; the others wait for one to finish.
  int admitted = 0;
  for (const auto& row : simulate(jobs, PackPolicy{}, config).jobs)
    admitted += row.start_s < 1.0 ? 1 : 0;
  return admitted;
}

int service_admits(const Case& c, const MemoryModel& model, bool single_lane) {
  SharingService service(
      {{0, "GPU-aaaa", 16 * kGiB}}, "t", [](pid_t, uint64_t) { return true; }, model);
  service.set_single_lane(single_lane);
  int granted = 0;
  for (int i = 0; i < kJobs; ++i) {
    LaneAsk ask;
    ask.pid = 100 + i;
    ask.workflow = "w" + std::to_string(i);
    ask.persistent_bytes = c.persistent_bytes;
    ask.ephemeral_bytes = c.ephemeral_bytes;
    granted += service.request(ask, 0).state == TicketState::kGranted ? 1 : 0;
  }
  return granted;
}

TEST(MemoryModel, SameJobsSameAdmissionInAllocatorPlannerSimulatorAndService) {
  const Case cases[] = {
      // The case: three 5 GiB jobs filled a 15.51 GiB lane and left 0.49 GiB, less
      // than their three contexts (0.88 GiB). With the context, two fit.
      {"5 GiB of weights", 5 * kGiB, 0},
      {"4.5 GiB + 0.5 GiB", 4 * kGiB + kGiB / 2, kGiB / 2},
      {"3 GiB + 1 GiB", 3 * kGiB, kGiB},
      {"7 GiB + 1 GiB", 7 * kGiB, kGiB},
  };
  const MemoryModel without_context{SafetyMargin{}, 0};
  const MemoryModel with_context;  // 300 MiB, the default
  std::map<std::string, std::pair<int, int>> single;
  for (const auto& c : cases) {
    for (const MemoryModel* model : {&without_context, &with_context}) {
      const std::string with = model == &with_context ? ", with the context" : ", no context";
      for (bool single_lane : {false, true}) {
        const std::string how = with + (single_lane ? ", one lane per GPU" : ", Salus's order");
        const int allocator = allocator_admits(c, *model, single_lane);
        EXPECT_EQ(simulator_admits(c, *model, single_lane), allocator) << c.name << how;
        EXPECT_EQ(service_admits(c, *model, single_lane), allocator) << c.name << how;
        if (!single_lane) continue;
        EXPECT_EQ(planner_admits(c, *model), allocator) << c.name << how << ", planner";
        (model == &with_context ? single[c.name].second : single[c.name].first) = allocator;
      }
    }
  }
  // The context decides the case: 3 jobs in the lane without it, 2 with it.
  EXPECT_EQ(single["5 GiB of weights"].first, 3);
  EXPECT_EQ(single["5 GiB of weights"].second, 2);
}

TEST(MemoryModel, ThePlanLeavesRoomForEveryContext) {
  // Every planned GPU holds its lanes plus one context per job.
  std::vector<JobProfile> jobs(3);
  for (int i = 0; i < 3; ++i) {
    jobs[i].job_id = "job" + std::to_string(i);
    jobs[i].gpu = "gpu" + std::to_string(i);
    jobs[i].persistent_bytes = 5 * kGiB;
    jobs[i].gpu_capacity_bytes = 16 * kGiB;
    jobs[i].utilization = 0.1;
    jobs[i].iteration_ns = 100'000'000;
  }
  const auto plan = plan_consolidation(jobs);
  EXPECT_EQ(plan.context_bytes, kDefaultContextBytes);
  for (const auto& gpu : plan.gpus) {
    int64_t held = gpu.free_bytes;
    for (const auto& lane : gpu.lanes)
      held += lane.capacity_bytes + kDefaultContextBytes * int64_t(lane.job_ids.size());
    EXPECT_EQ(held, gpu.capacity_bytes) << gpu.gpu;
    EXPECT_GE(gpu.free_bytes, 0);
  }
  EXPECT_EQ(plan.gpus_after, 2);
}

TEST(MemoryModel, SingleLaneModePutsEveryJobOfAGpuInOneLane) {
  std::vector<JobProfile> jobs(3);
  for (int i = 0; i < 3; ++i) {
    jobs[i].job_id = "job" + std::to_string(i);
    jobs[i].gpu = "gpu" + std::to_string(i);
    jobs[i].persistent_bytes = 2 * kGiB;
    jobs[i].ephemeral_peak_bytes = kGiB;
    jobs[i].gpu_capacity_bytes = 16 * kGiB;
    jobs[i].utilization = 0.1;
    jobs[i].iteration_ns = 100'000'000;
  }
  PlannerOptions options;
  options.single_lane = true;
  const auto plan = plan_consolidation(jobs, options);
  ASSERT_EQ(plan.gpus.size(), 1u);
  ASSERT_EQ(plan.gpus[0].lanes.size(), 1u);
  EXPECT_EQ(plan.gpus[0].lanes[0].job_ids.size(), 3u);
  EXPECT_TRUE(plan_to_json(plan).at("single_lane").get<bool>());
  // A latency job does not time-slice: it keeps a GPU of its own.
  jobs[0].labels["class"] = "latency";
  const auto with_latency = plan_consolidation(jobs, options);
  EXPECT_EQ(with_latency.gpus_after, 2);
  for (const auto& gpu : with_latency.gpus) EXPECT_EQ(gpu.lanes.size(), 1u);
}

TEST(MemoryModel, TheHostConfigStatesTheContext) {
  const auto path = testing::scratch_file("fleetscoped.conf",
                                          "database = /tmp/x.db  # other keys are fleetscoped's\n"
                                          "cuda-context-mib = 412\n");
  EXPECT_EQ(context_bytes_from_config(path), 412 * kMiB);
  const HostPlanning host = host_planning(path);
  EXPECT_EQ(host.options.memory.context_bytes, 412 * kMiB);
  EXPECT_EQ(host.context_source, path);
  EXPECT_EQ(host.options.interference.alpha, published_interference().model.alpha);

  // No file, or no key: the default, and the output says so.
  EXPECT_EQ(context_bytes_from_config(path + ".missing"), std::nullopt);
  const HostPlanning fallback = host_planning(path + ".missing");
  EXPECT_EQ(fallback.options.memory.context_bytes, kDefaultContextBytes);
  EXPECT_NE(fallback.context_source.find("default"), std::string::npos);

  // A bad value names the file, the line and what was expected.
  const auto bad = testing::scratch_file("bad.conf", "# comment\ncuda_context_mib = lots\n");
  try {
    context_bytes_from_config(bad);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ":2: cuda_context_mib: expected a whole number"),
              std::string::npos)
        << e.what();
  }
}

TEST(MemoryModel, ValidateRefusesImpossibleFigures) {
  MemoryModel model;
  EXPECT_NO_THROW(model.validate());
  model.context_bytes = -1;
  EXPECT_THROW(model.validate(), std::invalid_argument);
  model.context_bytes = 0;
  model.margin.z = -1;
  EXPECT_THROW(model.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace fleetscope::sharer
