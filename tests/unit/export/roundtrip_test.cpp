// import (Kineto JSON) -> export (Chrome JSON) -> re-import keeps every event: the same rows per
// table, and for the main kinds the very same times, ids and names, to the nanosecond.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "export_test_support.h"
#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::exporter {
namespace {

using testing::ScratchDir;

std::string kineto_trace(const std::string& name) {
  return std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto/" + name;
}

std::map<std::string, int64_t> counts_by_table(const store::Reader& reader) {
  std::map<std::string, int64_t> counts;
  for (const store::TableCount& count : reader.counts()) counts[count.table] = count.rows;
  return counts;
}

// Comparable projections of rows (names resolved, since string ids differ between files).
auto kernel_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int64_t, int32_t, int32_t, int64_t, std::string, int64_t>> keys;
  for (const auto& k : r.kernels())
    keys.emplace_back(k.start, k.end, k.deviceId, k.streamId, k.correlationId.value_or(-1),
                      r.string(k.demangledNameId), int64_t{k.gridX} * 65536 + k.blockX);
  std::sort(keys.begin(), keys.end());
  return keys;
}
auto runtime_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, std::string, int>> keys;
  for (const auto& c : r.runtime_calls())
    keys.emplace_back(c.start, c.end, c.globalTid, c.correlationId.value_or(-1), r.string(c.nameId),
                      static_cast<int>(c.eventClass));
  std::sort(keys.begin(), keys.end());
  return keys;
}
auto memcpy_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int32_t, int32_t, int32_t, int64_t>> keys;
  for (const auto& m : r.memcpys())
    keys.emplace_back(m.start, m.end, m.bytes, m.copyKind, m.srcKind.value_or(-1),
                      m.dstKind.value_or(-1), m.correlationId.value_or(-1));
  std::sort(keys.begin(), keys.end());
  return keys;
}
auto cpu_op_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, std::string, std::string, int64_t>> keys;
  for (const auto& op : r.cpu_ops())
    keys.emplace_back(op.start, op.end, op.globalTid, r.string(op.nameId), op.category,
                      op.externalId.value_or(-1));
  std::sort(keys.begin(), keys.end());
  return keys;
}
auto iteration_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> keys;
  for (const auto& it : r.iterations())
    keys.emplace_back(it.globalPid.value_or(-1), it.step, it.start, it.end);
  std::sort(keys.begin(), keys.end());
  return keys;
}
auto memory_keys(const store::Reader& r) {
  std::vector<std::tuple<int64_t, int32_t, int64_t, int64_t>> keys;
  for (const auto& m : r.memory_events())
    keys.emplace_back(m.ts, m.deviceId, m.bytes, m.globalPid.value_or(-1));
  std::sort(keys.begin(), keys.end());
  return keys;
}

class ExportRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportRoundTrip, ReimportKeepsEveryEvent) {
  const std::string original = kineto_trace(GetParam());
  ASSERT_TRUE(std::filesystem::exists(original))
      << "reference trace missing: " << original << " (tests/data/README.md)";
  ScratchDir dir;
  const auto first = importers::import_files({original}, dir.file("first.db"));
  ASSERT_EQ(first.size(), 1u);
  store::Reader imported(dir.file("first.db"));
  const ChromeExportStats stats = export_chrome(imported, dir.file("exported.json.gz"));
  EXPECT_EQ(stats.kernels, first[0].kernels);
  EXPECT_EQ(stats.runtime_calls, first[0].runtime_calls);
  EXPECT_EQ(stats.cpu_ops, first[0].cpu_ops);

  const auto second =
      importers::import_files({dir.file("exported.json.gz")}, dir.file("second.db"));
  ASSERT_EQ(second.size(), 1u);
  store::Reader reimported(dir.file("second.db"));

  const auto before = counts_by_table(imported), after = counts_by_table(reimported);
  EXPECT_EQ(after, before);
  EXPECT_EQ(second[0].kernels, first[0].kernels);
  EXPECT_EQ(second[0].memcpys, first[0].memcpys);
  EXPECT_EQ(second[0].memsets, first[0].memsets);
  EXPECT_EQ(second[0].runtime_calls, first[0].runtime_calls);
  EXPECT_EQ(second[0].syncs, first[0].syncs);
  EXPECT_EQ(second[0].cpu_ops, first[0].cpu_ops);
  EXPECT_EQ(second[0].iterations, first[0].iterations);
  EXPECT_EQ(second[0].memory_events, first[0].memory_events);
  EXPECT_EQ(second[0].start_ns, first[0].start_ns);
  EXPECT_EQ(second[0].end_ns, first[0].end_ns);
  EXPECT_EQ(second[0].gpu_vendor, first[0].gpu_vendor);

  EXPECT_TRUE(kernel_keys(reimported) == kernel_keys(imported));
  EXPECT_TRUE(runtime_keys(reimported) == runtime_keys(imported));
  EXPECT_TRUE(memcpy_keys(reimported) == memcpy_keys(imported));
  EXPECT_TRUE(cpu_op_keys(reimported) == cpu_op_keys(imported));
  EXPECT_TRUE(iteration_keys(reimported) == iteration_keys(imported));
  EXPECT_TRUE(memory_keys(reimported) == memory_keys(imported));
  EXPECT_EQ(reimported.gpus().size(), imported.gpus().size());
}

INSTANTIATE_TEST_SUITE_P(
    SharedKinetoTraces, ExportRoundTrip,
    ::testing::Values("hta-ns_resolution_trace_rank-0.json.gz",
                      "hta-critical_path_alexnet_trace.json.gz",
                      "hta-nccl_parser_config_nccl_data.json.gz",
                      "hta-critical_path_simple_add_trace.json.gz",
                      "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
                      "hta-timeline_analysis_sampled_rank-0.json.gz",
                      "hta-triton_example_triton_example.json.gz", "hta-cpu_only_rank-34.json.gz"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string name = info.param.substr(4, info.param.find(".json") - 4);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

}  // namespace
}  // namespace fleetscope::exporter
