// Two traced processes write one part each; the launcher merges them into one database.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "fleetscope/agent/capture_session.h"
#include "fleetscope/agent/fake_activity_source.h"
#include "fleetscope/agent/sqlite_record_sink.h"
#include "fleetscope/launcher/merge_parts.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/timeline/timeline_cache.h"
#include "record_builders.h"

namespace fleetscope::launcher {
namespace {

namespace fs = std::filesystem;
using namespace fleetscope::agent;
using namespace fleetscope::agent::testing;

class MergePartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fleetscope-merge-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes one part as the agent of process `pid` would, with `kernels` kernels.
  std::string write_part(int64_t pid, int kernels, const char* kernel_name) {
    FakeActivitySource source;
    SessionOptions options;
    std::string output = (dir_ / ("part-" + std::to_string(pid) + ".db")).string();
    SqliteRecordSink sink(output);
    options.pid = pid;
    options.command = "worker " + std::to_string(pid);
    options.hostname = "node-1";
    options.gpu_facts = [] {
      store::GpuInfo gpu;
      gpu.id = 0;
      gpu.name = "NVIDIA A100-SXM4-40GB";
      gpu.smCount = 108;
      return std::vector<store::GpuInfo>{gpu};
    };
    CaptureSession session(source, sink, options);
    EXPECT_TRUE(session.open(pid * 10));
    for (int i = 0; i < kernels; ++i) source.push(make_kernel(kernel_name));
    source.push(make_memcpy());
    CUpti_ActivityExternalCorrelation x{};
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalId = static_cast<uint64_t>(pid);
    x.correlationId = 1;
    source.push(x);
    EXPECT_TRUE(session.close(pid * 10 + 5).written);
    return output;
  }

  fs::path dir_;
};

TEST_F(MergePartsTest, MergesCapturesProcessesAndEvents) {
  std::string a = write_part(100, 3, "_Z7kernelAv");
  std::string b = write_part(200, 5, "_Z7kernelBv");
  std::string merged = (dir_ / "merged.db").string();
  MergeResult result = merge_parts({a, b}, merged);
  EXPECT_EQ(result.captures, 2);
  EXPECT_EQ(result.kernels, 8);
  EXPECT_EQ(result.memcpys, 2);

  store::Reader reader(merged);
  auto captures = reader.captures();
  ASSERT_EQ(captures.size(), 2u);
  EXPECT_NE(captures[0].id, captures[1].id);
  EXPECT_EQ(captures[0].source_path, "worker 100");
  EXPECT_EQ(captures[1].source_path, "worker 200");
  EXPECT_EQ(reader.processes().size(), 2u);
  EXPECT_EQ(reader.hosts().size(), 1u);  // same host name in both parts
  EXPECT_EQ(reader.gpus().size(), 2u);   // one GPU row per capture

  store::EventFilter second;
  second.captureId = captures[1].id;
  auto kernels = reader.kernels(second);
  ASSERT_EQ(kernels.size(), 5u);
  EXPECT_EQ(reader.string(kernels[0].demangledNameId), "kernelB()");
  EXPECT_EQ(kernels[0].globalPid, 200LL << 24);

  auto external = reader.external_correlations();
  ASSERT_EQ(external.size(), 2u);
  std::map<int64_t, int64_t> capture_of_external;
  for (const auto& row : external) capture_of_external[row.externalId] = row.captureId;
  EXPECT_EQ(capture_of_external[100], captures[0].id);
  EXPECT_EQ(capture_of_external[200], captures[1].id);

  // The run's timeline summaries were written once the merged database was in place: the GUI's
  // first open reads them (timeline/).
  for (const auto& capture : captures) {
    auto summary = timeline::load_timeline_cache(merged, capture.id);
    ASSERT_TRUE(summary) << "capture " << capture.id;
    EXPECT_FALSE(summary->tracks.empty());
    EXPECT_EQ(summary->levels.size(), summary->tracks.size());
  }
}

TEST_F(MergePartsTest, BadPartLeavesNoOutput) {
  std::string a = write_part(100, 1, "_Z7kernelAv");
  fs::path broken = dir_ / "part-300.db";
  {
    std::FILE* f = std::fopen(broken.c_str(), "w");
    std::fputs("not a database", f);
    std::fclose(f);
  }
  std::string merged = (dir_ / "merged.db").string();
  EXPECT_ANY_THROW(merge_parts({a, broken.string()}, merged));
  EXPECT_FALSE(fs::exists(merged));
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find("merged.db.tmp"), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::launcher
