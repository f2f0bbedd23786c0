#include "fleetscope/export/export_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "export_test_support.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::exporter {
namespace {

using testing::ScratchDir;

std::string one_kernel_db(const ScratchDir& dir) {
  const std::string path = dir.file("k.db");
  store::Writer writer(store::Database::create(path));
  store::Capture capture;
  capture.source = "test";
  const int64_t id = writer.add_capture(capture);
  store::Kernel kernel;
  kernel.start = 5'000'000;
  kernel.end = 5'002'500;
  kernel.demangledName = "only_kernel";
  kernel.captureId = id;
  writer.add(kernel);
  writer.finish();
  return path;
}

struct Result {
  int code;
  std::string out, err;
};
Result run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_export_command(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(ExportCommand, WritesTheFileAndSummarizes) {
  ScratchDir dir;
  const std::string db = one_kernel_db(dir);
  const Result result = run({db, "-o", dir.file("t.json"), "--format", "chrome", "--quiet"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("1 kernels"), std::string::npos) << result.out;
  const auto trace = testing::read_json(dir.file("t.json"));
  const auto kernels = testing::events_of(trace, "X", "kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("name"), "only_kernel");
  EXPECT_EQ(trace.at("baseTimeNanoseconds"), 5'000'000);
}

TEST(ExportCommand, UsageErrorsExitTwo) {
  ScratchDir dir;
  const std::string db = one_kernel_db(dir);
  EXPECT_EQ(run({db}).code, 2);                        // no -o
  EXPECT_EQ(run({"-o", dir.file("x.json")}).code, 2);  // no DB
  EXPECT_EQ(run({db, "-o", dir.file("x.json"), "--format", "csv"}).code, 2);
  EXPECT_EQ(run({db, "-o", dir.file("x.json"), "--capture", "one"}).code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.json")));
  const Result help = run({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--capture"), std::string::npos);
}

TEST(ExportCommand, FailuresExitOneAndLeaveNoFile) {
  ScratchDir dir;
  const std::string db = one_kernel_db(dir);
  const Result missing_capture = run({db, "-o", dir.file("x.json"), "--capture", "42"});
  EXPECT_EQ(missing_capture.code, 1);
  EXPECT_NE(missing_capture.err.find("no capture with id 42"), std::string::npos)
      << missing_capture.err;
  const Result missing_db = run({dir.file("absent.db"), "-o", dir.file("x.json")});
  EXPECT_EQ(missing_db.code, 1);
  EXPECT_EQ(missing_db.err.rfind("error: ", 0), 0u) << missing_db.err;
  const Result bad_dir = run({db, "-o", dir.file("no/such/dir/x.json")});
  EXPECT_EQ(bad_dir.code, 1);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"k.db"}));
}

}  // namespace
}  // namespace fleetscope::exporter
