// importers::import_to_memory: the same rows as a file import, without a file.
#include <gtest/gtest.h>

#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"
#include "importer_test_util.h"

using namespace fleetscope;
using namespace fleetscope::importers;
using namespace fleetscope::importers::test;

namespace {

// Per event table: rows, and sums of the time columns, so a shifted or dropped row shows.
std::vector<std::string> fingerprint(const store::Reader& r, int64_t capture) {
  std::vector<std::string> out;
  const std::string where = " WHERE captureId = " + std::to_string(capture);
  // Each table with the id column that links its rows (cpu_ops link by external id).
  const std::pair<const char*, const char*> tables[] = {
      {"CUPTI_ACTIVITY_KIND_KERNEL", "correlationId"},
      {"CUPTI_ACTIVITY_KIND_MEMCPY", "correlationId"},
      {"CUPTI_ACTIVITY_KIND_MEMSET", "correlationId"},
      {"CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId"},
      {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "correlationId"},
      {"cpu_ops", "externalId"}};
  for (const auto& [table, link] : tables) {
    auto q = r.query(std::string("SELECT COUNT(*), TOTAL(start), TOTAL(end), COUNT(DISTINCT ") +
                     link + ") FROM " + table + where);
    std::string row = table;
    for (const auto& cell : q.rows.at(0)) row += " " + cell.value_or("NULL");
    out.push_back(row);
  }
  auto names = r.query(
      "SELECT group_concat(value, '|') FROM (SELECT DISTINCT s.value FROM "
      "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName" +
      where + " ORDER BY 1)");
  out.push_back("kernel names " + names.rows.at(0).at(0).value_or(""));
  for (const char* table : {"iterations", "memory_events", "TARGET_INFO_GPU"})
    out.push_back(std::string(table) + " " + std::to_string(count(r, table, capture)));
  out.push_back("processes " + std::to_string(scalar(r, "SELECT COUNT(*) FROM processes")));
  return out;
}

}  // namespace

TEST(MemoryImport, SameRowsAsTheFileImportForEverySharedTrace) {
  ASSERT_TRUE(fs::exists(kineto_dir())) << kineto_dir() << " not found: the shared data is needed";
  ScratchDir dir;
  int n = 0;
  for (const auto& e : fs::directory_iterator(kineto_dir())) {
    const std::string input = e.path().string();
    SCOPED_TRACE(input);
    const std::string out = dir.file("file-" + std::to_string(n++) + ".db");
    const ImportResult from_file = import_files({input}, out).at(0);
    MemoryImport memory = import_to_memory(input);
    EXPECT_TRUE(memory.database.in_memory());
    EXPECT_EQ(memory.result.kernels, from_file.kernels);
    EXPECT_EQ(memory.result.memcpys, from_file.memcpys);
    EXPECT_EQ(memory.result.runtime_calls, from_file.runtime_calls);
    EXPECT_EQ(memory.result.cpu_ops, from_file.cpu_ops);
    EXPECT_EQ(memory.result.events_seen, from_file.events_seen);
    EXPECT_EQ(memory.result.start_ns, from_file.start_ns);
    EXPECT_EQ(memory.result.end_ns, from_file.end_ns);
    store::Reader file_reader(out);
    store::Reader memory_reader(std::move(memory.database));
    ASSERT_EQ(memory_reader.captures().size(), 1u);
    EXPECT_EQ(memory_reader.captures()[0].id, memory.result.capture_id);
    EXPECT_EQ(memory_reader.captures()[0].source_path, input);
    EXPECT_EQ(fingerprint(memory_reader, memory.result.capture_id),
              fingerprint(file_reader, from_file.capture_id));
  }
  EXPECT_GE(n, 14);
}

TEST(MemoryImport, BadInputIsAnInputError) {
  ScratchDir dir;
  const std::string garbage = dir.write("garbage.json", "not a trace");
  EXPECT_THROW(import_to_memory(garbage), InputError);
  const std::string bad_json = dir.write("bad.json", R"({"traceEvents": [{"ph": "X", )");
  EXPECT_THROW(import_to_memory(bad_json), InputError);
  EXPECT_THROW(import_to_memory(dir.file("missing.json")), InputError);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"bad.json", "garbage.json"}));
}
