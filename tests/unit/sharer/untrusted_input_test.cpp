// Issue 15 (untrusted input) for the simulator and the planner: impossible jobs and flags are
// refused with the file and position, and every command terminates.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetscope/sharer/commands.h"
#include "sanitizers.h"
#include "test_paths.h"

namespace fleetscope::sharer {
namespace {

using testing::jobs_data;
using testing::scratch_file;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome sim(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_sim_command(args, out, err);
  return {code, out.str(), err.str()};
}

Outcome plan(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_share_plan_command(args, out, err);
  return {code, out.str(), err.str()};
}

const char* kHeader = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";

Outcome sim_rows(const std::string& rows, std::vector<std::string> extra = {}) {
  const auto path = scratch_file("jobs.csv", std::string(kHeader) + rows);
  std::vector<std::string> args{"--jobs", path, "--profiles", jobs_data("salus_workloads.csv"),
                                "--gpus", "2",  "--policy",   "srtf"};
  args.insert(args.end(), extra.begin(), extra.end());
  return sim(args);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(UntrustedInput, NanSubmitTimeIsRefusedWithItsPosition) {
  const auto outcome = sim_rows("0,1,nan,10,vgg19,10,1\n");
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "jobs.csv:2: column 3 (submit_time)")) << outcome.err;
}

TEST(UntrustedInput, NegativeAndInfiniteValuesAreRefused) {
  EXPECT_TRUE(contains(sim_rows("0,1,-5,10,vgg19,10,1\n").err, "column 3 (submit_time)"));
  EXPECT_TRUE(contains(sim_rows("0,1,0,10,vgg19,-10,1\n").err, "column 6 (duration)"));
  EXPECT_TRUE(contains(sim_rows("0,1,0,10,vgg19,inf,1\n").err, "column 6 (duration)"));
  EXPECT_TRUE(contains(sim_rows("0,0,0,10,vgg19,10,1\n").err, "column 2 (num_gpu)"));
  EXPECT_TRUE(contains(sim_rows("0,-1,0,10,vgg19,10,1\n").err, "column 2 (num_gpu)"));
}

TEST(UntrustedInput, EndlessIterationCountsAreRefused) {
  const auto outcome = sim_rows("0,1,0,9223372036854775807,vgg19,10,1\n");
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "column 4 (iterations)")) << outcome.err;
}

TEST(UntrustedInput, ImpossibleFlagsAreUsageErrors) {
  EXPECT_EQ(sim_rows("0,1,0,10,vgg19,10,1\n", {"--interference-alpha", "inf"}).code, 2);
  EXPECT_EQ(sim_rows("0,1,0,10,vgg19,10,1\n", {"--interference-alpha", "nan"}).code, 2);
  EXPECT_EQ(sim_rows("0,1,0,10,vgg19,10,1\n", {"--switch-cost-ms", "-1"}).code, 2);
  EXPECT_EQ(sim_rows("0,1,0,10,vgg19,10,1\n", {"--margin-sigma", "nan"}).code, 2);
  const auto huge =
      sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "100000000", "--policy", "fifo"});
  EXPECT_EQ(huge.code, 2);
  EXPECT_TRUE(contains(huge.err, "--gpus")) << huge.err;
}

// An option given twice with different values is a usage error (common/args.h says the same):
// `sim --gpus 8 --gpus 2` simulated 2 GPUs without a word.
TEST(UntrustedInput, AnOptionGivenTwiceDifferentlyIsAUsageError) {
  const auto outcome = sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "8", "--gpus",
                            "2", "--policy", "fifo"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_TRUE(contains(outcome.err, "--gpus given twice ('8', then '2'): give it once"))
      << outcome.err;
  const auto same = sim({"--jobs", jobs_data("tiresias_60_job.csv"), "--gpus", "8", "--gpus", "8",
                         "--policy", "fifo"});
  EXPECT_EQ(same.code, 0) << same.err;
}

// Two rows with one job_id were both simulated and reported under the same id (issue 23): the
// trace is refused naming both lines. The same for an Alibaba pod list's names and node list's sn.
TEST(UntrustedInput, ADuplicateJobIdIsRefusedNamingBothLines) {
  const auto outcome = sim_rows("3,1,0,10,vgg19,10,1\n4,1,5,10,vgg19,10,1\n03,1,9,10,vgg19,10,1\n");
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err,
                       "jobs.csv:4: column 1 (job_id): expected job_id unique in the "
                       "file (line 2 has it too), found '03'"))
      << outcome.err;
  EXPECT_TRUE(outcome.out.empty()) << outcome.out;

  const auto pods = scratch_file(
      "pods.csv",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time\np-1,1000,1024,1,500,,LS,Running,0,10\np-1,1000,1024,1,500,,LS,Running,1,"
      "10\n");
  const auto packed = sim({"--jobs", pods, "--gpus", "8"});
  EXPECT_EQ(packed.code, 1);
  EXPECT_TRUE(contains(packed.err,
                       "pods.csv:3: column 1 (name): expected name unique in the file "
                       "(line 2 has it too), found 'p-1'"))
      << packed.err;
}

TEST(UntrustedInput, HeaderOnlyTraceIsAnError) {
  const auto outcome = sim_rows("");
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "jobs.csv:2: expected at least one job row")) << outcome.err;
}

TEST(UntrustedInput, HugeFieldIsNotEchoedWhole) {
  const std::string field(10 * 1024 * 1024, 'x');
  const auto outcome = sim_rows("0,1," + field + ",10,vgg19,10,1\n");
  EXPECT_EQ(outcome.code, 1);
  EXPECT_LT(outcome.err.size(), 1000u);
  EXPECT_TRUE(contains(outcome.err, "(10485760 characters)")) << outcome.err.substr(0, 300);
}

// A missing profiles file (the default one next to the trace, or --profiles) is named with the
// reason and what was expected: "sim: salus_workloads.csv: cannot open" said neither.
TEST(UntrustedInput, MissingProfilesFileSaysWhyAndWhatIsExpected) {
  const auto jobs = scratch_file("jobs.csv", std::string(kHeader) + "0,1,0,10,vgg19,10,1\n");
  const std::string beside =
      (std::filesystem::path(jobs).parent_path() / "salus_workloads.csv").string();
  std::filesystem::remove(beside);
  auto outcome = sim({"--jobs", jobs, "--gpus", "1", "--policy", "fifo"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "cannot read " + beside +
                                        ": no such file; expected Salus workload profiles "
                                        "(--profiles FILE; default: salus_workloads.csv next "
                                        "to the job trace)"))
      << outcome.err;
  const std::string missing = beside + ".missing";
  outcome = sim({"--jobs", jobs, "--profiles", missing, "--gpus", "1", "--policy", "fifo"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, "cannot read " + missing + ": no such file; expected"))
      << outcome.err;
}

TEST(UntrustedInput, EmptyProfilesFileIsBlamedOnTheProfilesFile) {
  const auto profiles = scratch_file("profiles.csv", "");
  const auto jobs = scratch_file("jobs.csv", std::string(kHeader) + "0,1,0,10,vgg19,10,1\n");
  const auto outcome =
      sim({"--jobs", jobs, "--profiles", profiles, "--gpus", "1", "--policy", "fifo"});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, profiles + ":1: expected at least one workload profile"))
      << outcome.err;
}

TEST(UntrustedInput, CandidateFieldOfTheWrongTypeNamesFileElementAndField) {
  const auto path = scratch_file("candidates.json", R"([
    {"job_id": "a", "gpu": "g0", "persistent_bytes": 1, "ephemeral_peak_bytes": 1,
     "gpu_capacity_bytes": 100, "utilization": 0.1, "iteration_ns": "fast"}])");
  const auto outcome = plan({"--candidates", path});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(
      contains(outcome.err, path + ": element 0: field 'iteration_ns': expected an integer"))
      << outcome.err;
  const auto huge = scratch_file("huge.json", R"([
    {"job_id": "a", "gpu": "g0", "persistent_bytes": 1e300, "ephemeral_peak_bytes": 1,
     "gpu_capacity_bytes": 100, "utilization": 0.1}])");
  EXPECT_TRUE(contains(plan({"--candidates", huge}).err, "field 'persistent_bytes'"));
}

TEST(UntrustedInput, NumberOverflowingADoubleNamesTheFile) {
  // Found by the candidates fuzz target: the JSON parser raises out_of_range, not parse_error.
  const auto path = scratch_file("overflow.json", R"([{"job_id":"a","persistent_bytes":1e600}])");
  const auto outcome = plan({"--candidates", path});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, path + ": not valid JSON")) << outcome.err;
}

// A FIFO given as a job trace, profiles, node list, runs or candidates file waited for a writer
// for ever; a directory read as an empty file ("adir:1: expected a header line").
TEST(UntrustedInput, AFifoOrADirectoryIsNamedNotRead) {
  const auto dir = std::filesystem::path(scratch_file("x", "")).parent_path();
  const std::string fifo = (dir / "fifo.csv").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string folder = (dir / "folder").string();
  std::filesystem::create_directories(folder);
  const auto jobs = scratch_file("jobs.csv", std::string(kHeader) + "0,1,0,10,vgg19,10,1\n");
  for (const std::string& path : {fifo, folder}) {
    SCOPED_TRACE(path);
    const std::string problem =
        path == fifo ? ": not a regular file; expected " : ": it is a directory; expected ";
    auto outcome = sim({"--jobs", path, "--gpus", "2", "--policy", "srtf"});
    EXPECT_EQ(outcome.code, 1);
    EXPECT_TRUE(contains(outcome.err, "cannot read " + path + problem + "a job trace (CSV)"))
        << outcome.err;
    outcome = sim({"--jobs", jobs, "--profiles", path, "--gpus", "2", "--policy", "srtf"});
    EXPECT_EQ(outcome.code, 1);
    EXPECT_TRUE(contains(outcome.err, "cannot read " + path + problem + "Salus workload profiles"))
        << outcome.err;
    outcome = plan({"--candidates", path});
    EXPECT_EQ(outcome.code, 1);
    EXPECT_TRUE(contains(outcome.err, "cannot read " + path + problem + "a JSON array of job"))
        << outcome.err;
  }
}

// A CSV saved by a spreadsheet starts with a UTF-8 byte order mark: its first column was
// "\xEF\xBB\xBFjob_id" and the trace was refused for want of a job_id column. A header naming one
// column twice was read by its first and the second ignored.
TEST(UntrustedInput, AByteOrderMarkIsIgnoredAndARepeatedColumnRefused) {
  const auto path =
      scratch_file("bom.csv", "\xEF\xBB\xBF" + std::string(kHeader) + "0,1,0,10,vgg19,10,1\n");
  const auto outcome = sim({"--jobs", path, "--profiles", jobs_data("salus_workloads.csv"),
                            "--gpus", "2", "--policy", "srtf"});
  EXPECT_EQ(outcome.code, 0) << outcome.err;
  const auto twice =
      scratch_file("twice.csv",
                   "job_id,num_gpu,submit_time,iterations,model_name,duration,job_id\n"
                   "0,1,0,10,vgg19,10,1\n");
  const auto refused = sim({"--jobs", twice, "--profiles", jobs_data("salus_workloads.csv"),
                            "--gpus", "2", "--policy", "srtf"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_TRUE(contains(refused.err,
                       "twice.csv:1: expected each column named once, found 'job_id' in columns "
                       "1 and 7"))
      << refused.err;
}

// Not valid JSON is said with its position and what was expected, without the JSON library's
// "[json.exception.parse_error.101]" tag.
TEST(UntrustedInput, InvalidCandidatesJsonIsSaidWithoutTheLibrarysTag) {
  const auto path = scratch_file("nan.json", R"([{"job_id":"a","persistent_bytes":NaN}])");
  const auto outcome = plan({"--candidates", path});
  EXPECT_EQ(outcome.code, 1);
  EXPECT_TRUE(contains(outcome.err, path + ": not valid JSON (parse error at line 1, column"))
      << outcome.err;
  EXPECT_TRUE(contains(outcome.err, "expected a JSON array of job profiles")) << outcome.err;
  EXPECT_FALSE(contains(outcome.err, "json.exception")) << outcome.err;
}

TEST(UntrustedInput, NanMaxSlowdownIsAUsageError) {
  const auto path = scratch_file("c.json", "[]");
  EXPECT_EQ(plan({"--candidates", path, "--max-slowdown", "nan"}).code, 2);
  EXPECT_EQ(plan({"--candidates", path, "--interference-alpha", "inf"}).code, 2);
}

TEST(UntrustedInput, ManyCandidatesAreConsolidated) {
  // 20,000 candidates (1e5 took over 120 s before the planner's index; its time is measured in
  // docs/benchmarks.md, not asserted here).
  nlohmann::json candidates = nlohmann::json::array();
  for (int i = 0; i < 20000; ++i) {
    candidates.push_back({{"job_id", "j" + std::to_string(i)},
                          {"gpu", "gpu" + std::to_string(i)},
                          {"persistent_bytes", int64_t{1} << (28 + i % 4)},
                          {"ephemeral_peak_bytes", int64_t{1} << (27 + i % 3)},
                          {"gpu_capacity_bytes", int64_t{16} << 30},
                          {"utilization", 0.01 * (1 + i % 30)},
                          {"iteration_ns", 50000000 + 1000000 * (i % 50)}});
  }
  const auto path = scratch_file("many.json", candidates.dump());
  const auto begin = std::chrono::steady_clock::now();
  const auto outcome = plan({"--candidates", path, "--format", "json"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_EQ(outcome.code, 0) << outcome.err;
  const auto document = nlohmann::json::parse(outcome.out);
  EXPECT_LT(document.at("gpus_after").get<int>(), 100000 / 4);  // they do consolidate
  // Under AddressSanitizer (the asan preset, a Debug build) the same plan took 159 s at load 6:
  // the bound would measure the sanitizer, so there only the consolidation above is checked.
  if (test_support::kUnderAddressSanitizer)
    std::cout << "not bounding the plan's " << seconds << " s under AddressSanitizer\n";
  else
    EXPECT_LT(seconds, 30.0);  // was over 120 s
}

TEST(ShareCalibrate, FitsAlphaAndReportsTheErrorOrNamesTheBadRow) {
  const auto runs = scratch_file("runs.csv",
                                 "own_utilization,others_utilization,measured_slowdown\n"
                                 "0.5,0.5,1.1\n1.0,1.0,2.4\n");
  std::ostringstream out, err;
  ASSERT_EQ(run_share_calibrate_command({"--runs", runs, "--format", "json"}, out, err), 0)
      << err.str();
  const auto json = nlohmann::json::parse(out.str());
  // Least squares on y = (slowdown - 1 + u) / (u p) - 1 = alpha * min(1, others), p the
  // throughput bound (1 at U = 1, 2 for two compute-bound jobs): x = 0.5, 1; y = 0.2, 0.2:
  // alpha = (0.1 + 0.2) / (0.25 + 1) = 0.24. Held out one run at a time it beats alpha = 0, so
  // it is used.
  EXPECT_NEAR(json.at("alpha").get<double>(), 0.24, 1e-12);
  EXPECT_EQ(json.at("model_used"), true);
  EXPECT_LT(json.at("rms_error_calibrated").get<double>(),
            json.at("rms_error_uncalibrated").get<double>());
  const auto bad = scratch_file("bad.csv",
                                "own_utilization,others_utilization,measured_slowdown\n"
                                "0.5,0.5,-3\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(run_share_calibrate_command({"--runs", bad}, out2, err2), 1);
  EXPECT_TRUE(contains(err2.str(), bad + ":2: column 3 (measured_slowdown)")) << err2.str();
  std::ostringstream out3, err3;
  EXPECT_EQ(run_share_calibrate_command({}, out3, err3), 2);
}

}  // namespace
}  // namespace fleetscope::sharer
