#include "fleetscope/analyzer/consolidation.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "db_fixture.h"
#include "fleetscope/analyzer/declared_memory.h"
#include "fleetscope/store/error.h"
#include "temp_dir.h"

namespace fleetscope::analyzer {
namespace {

constexpr int64_t MiB = int64_t{1} << 20;

store::MemoryEvent ev(int64_t ts, int64_t bytes, std::optional<int64_t> total = std::nullopt) {
  store::MemoryEvent e;
  e.ts = ts, e.bytes = bytes, e.total_allocated = total;
  return e;
}

TEST(MemoryFootprint, PersistentAndEphemeralPerIteration) {
  // 100 MiB before the steps; step 1 peaks at +30, step 2 at +50 and leaks 10.
  std::vector<store::MemoryEvent> events = {ev(0, 100 * MiB), ev(15, 30 * MiB), ev(18, -30 * MiB),
                                            ev(25, 50 * MiB), ev(28, -40 * MiB)};
  auto fp = memory_footprint(events, {{10, 20}, {20, 30}});
  EXPECT_EQ(fp.persistent_bytes, 100 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_bytes, 50 * MiB);
  EXPECT_EQ(fp.peak_bytes, 150 * MiB);
  EXPECT_DOUBLE_EQ(fp.ephemeral_peak_stddev_bytes, 10.0 * MiB);  // peaks 30 and 50 MiB
  // With a third step the leak shows in P.
  fp = memory_footprint(events, {{10, 20}, {20, 30}, {30, 40}});
  EXPECT_EQ(fp.persistent_bytes, 110 * MiB);
}

TEST(MemoryFootprint, UsesReportedTotalsAndWorksWithoutIterations) {
  // total_allocated includes memory allocated before the capture (500 MiB).
  std::vector<store::MemoryEvent> events = {ev(0, 10 * MiB, 510 * MiB),
                                            ev(5, -10 * MiB, 500 * MiB)};
  auto fp = memory_footprint(events, {});
  EXPECT_EQ(fp.persistent_bytes, 500 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_bytes, 10 * MiB);
  fp = memory_footprint(events, {{-1, 10}});
  EXPECT_EQ(fp.persistent_bytes, 500 * MiB);  // level before the first event: 510 - 10
  EXPECT_EQ(fp.ephemeral_peak_bytes, 10 * MiB);
  EXPECT_EQ(fp.ephemeral_peak_stddev_bytes, -1.0);  // one iteration
  EXPECT_EQ(memory_footprint({}, {}).peak_bytes, 0);
}

TEST(ConsolidationCandidates, FromDatabase) {
  testing::TempDir dir;
  auto ids = testing::write_shared_case(dir.file("t.db"));
  store::Reader reader(dir.file("t.db"));
  auto list = consolidation_candidates(reader);
  ASSERT_EQ(list.size(), 1u);
  const auto& c = list[0];
  EXPECT_EQ(c.capture_id, ids.capture);
  EXPECT_EQ(c.workflow_id, ids.workflow);
  EXPECT_EQ(c.workflow, "resnet-train");
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.labels.at("priority"), "batch");
  EXPECT_EQ(c.gpu_name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(c.gpu_memory_bytes, int64_t{40} << 30);
  EXPECT_TRUE(c.memory_measured);
  EXPECT_EQ(c.persistent_bytes, int64_t{1} << 30);
  EXPECT_EQ(c.ephemeral_peak_bytes, 512 * MiB);
  EXPECT_DOUBLE_EQ(c.ephemeral_peak_stddev_bytes, 128.0 * MiB);  // peaks 256 and 512 MiB
  // Two recorded iterations; the last ProfilerStep is not a step (HTA's rule, counted_steps()),
  // so one step of 250 µs, while the memory peaks above come from both iterations.
  EXPECT_EQ(c.iterations, 1);
  EXPECT_EQ(c.iteration_ns, 250'000);
  EXPECT_DOUBLE_EQ(c.utilization, 0.76);
  EXPECT_FALSE(c.co_location_candidate);  // 76 % busy
  ConsolidationOptions loose;
  loose.max_utilization = 0.9;
  auto relaxed = consolidation_candidates(reader, loose);
  EXPECT_TRUE(relaxed.at(0).co_location_candidate);
}

// Declared memory (declared_memory.h): Salus's workloads table, and a candidate without memory
// events that takes a row's peak as P.

std::string write_file(const test_support::TempDir& dir, const std::string& name,
                       const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

TEST(DeclaredMemory, ReadsSalusWorkloadsAndNamesTheLineOfABadRow) {
  test_support::TempDir dir;
  const std::string good =
      write_file(dir, "w.csv",
                 "alexnet_100_1min,66.886,1396.5,1332,python tf_cnn_benchmarks.py --model=alexnet\n"
                 "vgg11_25_1min,67.059,3709.6,565,python x\n");
  const auto rows = read_salus_workloads(good);
  ASSERT_EQ(rows.size(), 2u);
  const DeclaredMemory& a = rows.at("alexnet_100_1min");
  EXPECT_EQ(a.peak_bytes, static_cast<int64_t>(1396.5 * MiB));
  EXPECT_EQ(a.iteration_ns, 50'214'715);  // 66.886 s / 1332, rounded
  EXPECT_EQ(a.source, good + ":alexnet_100_1min");

  for (const std::string& bad : {std::string("x,1,nan,3,cmd\n"), std::string("x,1,-5,3,cmd\n"),
                                 std::string("x,1,2\n"), std::string("x,1e999,2,3,cmd\n")}) {
    const std::string path =
        write_file(dir, "bad.csv", "alexnet_25_1min,62.591,686.6,2726,c\n" + bad);
    try {
      read_salus_workloads(path);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": line 2"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_salus_workloads(write_file(dir, "empty.csv", "")), InputError);
  // `candidates --memory-from FIFO` waited for a writer for ever.
  const std::string fifo = dir.file("fifo.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_salus_workloads(fifo);
    ADD_FAILURE() << "read a FIFO";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read " + fifo + ": not a regular file"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeclaredMemory, FillsOnlyUnmeasuredCandidatesAndDecidesTheVerdictAgain) {
  DeclaredMemory m{"w.csv:alexnet_100_1min", 1400 * MiB, 50'000'000};
  ConsolidationCandidate idle;
  idle.utilization = 0.005, idle.gpu_memory_bytes = 40'000 * MiB;
  idle.reason = "no memory events: P and T unknown";
  apply_declared_memory(idle, m);
  EXPECT_TRUE(idle.co_location_candidate) << idle.reason;
  EXPECT_EQ(idle.persistent_bytes, 1400 * MiB);  // the whole peak as P: the safe side
  EXPECT_EQ(idle.ephemeral_peak_bytes, 0);
  EXPECT_EQ(idle.iteration_ns, 50'000'000);
  EXPECT_EQ(idle.memory_source, "w.csv:alexnet_100_1min");
  EXPECT_NE(idle.reason.find("declared"), std::string::npos);
  // As `candidates` and `share plan` show it: the evidence, then its detail, once each.
  EXPECT_EQ(idle.memory_evidence + ": " + idle.memory_evidence_detail,
            "declared: w.csv:alexnet_100_1min (peak taken whole as P)");

  ConsolidationCandidate busy = idle;
  busy = ConsolidationCandidate{};
  busy.utilization = 0.9, busy.gpu_memory_bytes = 40'000 * MiB, busy.iteration_ns = 7;
  apply_declared_memory(busy, m);
  EXPECT_FALSE(busy.co_location_candidate);
  EXPECT_EQ(busy.iteration_ns, 7);  // measured iteration time kept

  ConsolidationCandidate small_gpu;
  small_gpu.utilization = 0.1, small_gpu.gpu_memory_bytes = 1000 * MiB;
  apply_declared_memory(small_gpu, m);
  EXPECT_FALSE(small_gpu.co_location_candidate);

  ConsolidationCandidate measured;
  measured.memory_measured = true, measured.persistent_bytes = 5;
  apply_declared_memory(measured, m);
  EXPECT_EQ(measured.persistent_bytes, 5);
  EXPECT_TRUE(measured.memory_source.empty());
}

}  // namespace
}  // namespace fleetscope::analyzer
