// Database::create_in_memory / another_connection and WriterOptions::build_indexes: the store
// side of analysing a trace file without writing a database (importers::import_to_memory).
#include <gtest/gtest.h>

#include <filesystem>

#include "fleetscope/store/error.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"

using namespace fleetscope;
using namespace fleetscope::store;

namespace {

Kernel kernel(int64_t start, int64_t end, int64_t capture) {
  Kernel k;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = 7;
  k.demangledName = "void gemm_kernel<float>(float*)";
  k.captureId = capture;
  return k;
}

// The post-load indexes (schema/indexes.sql); the schema itself declares one more, which every
// database has.
int64_t count_indexes(const Database& db) {
  Statement s = db.prepare(
      "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('kernel_by_start', "
      "'kernel_by_stream', 'runtime_by_correlation', 'memcpy_by_start')");
  return s.step() ? s.column_int(0) : -1;
}

}  // namespace

TEST(StoreInMemory, WriterConnectionRowsAreSeenByTheFirstConnection) {
  Database db = Database::create_in_memory();
  EXPECT_TRUE(db.in_memory());
  EXPECT_EQ(db.schema_version(), kSchemaVersion);
  EXPECT_FALSE(std::filesystem::exists(db.path())) << db.path();
  int64_t capture_id = 0;
  {
    WriterOptions options;
    options.temporary_output = true;
    Writer writer(db.another_connection(), options);
    Capture capture;
    capture.kind = CaptureKind::imported;
    capture.source = "test";
    capture_id = writer.add_capture(capture);
    writer.add(kernel(100, 250, capture_id));
    writer.add(kernel(300, 320, capture_id));
    writer.finish();  // closes the writer's connection; the database lives on in `db`
  }
  Reader reader(std::move(db));
  ASSERT_EQ(reader.captures().size(), 1u);
  EXPECT_EQ(reader.captures()[0].source, "test");
  auto kernels = reader.kernels();
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].start, 100);
  EXPECT_EQ(kernels[1].end, 320);
  EXPECT_EQ(reader.string(kernels[0].demangledNameId), "void gemm_kernel<float>(float*)");
  EXPECT_EQ(reader.string(kernels[0].shortNameId), "gemm_kernel");
  // The default writer builds the post-load indexes, in memory as on disk.
  EXPECT_GT(count_indexes(reader.database()), 0);
}

TEST(StoreInMemory, EachDatabaseIsNewAndFreedWithItsLastConnection) {
  std::string first_path;
  {
    Database first = Database::create_in_memory();
    first_path = first.path();
    Writer writer(first.another_connection());
    Capture capture;
    capture.kind = CaptureKind::imported;
    writer.add_capture(capture);
    writer.finish();
    EXPECT_EQ(Reader(first.another_connection(OpenMode::read_only)).captures().size(), 1u);
  }
  Database second = Database::create_in_memory();
  EXPECT_NE(second.path(), first_path);
  EXPECT_TRUE(Reader(std::move(second)).captures().empty());
}

TEST(StoreInMemory, ReadOnlyConnectionRefusesWrites) {
  Database db = Database::create_in_memory();
  Database reader = db.another_connection(OpenMode::read_only);
  EXPECT_THROW(reader.exec("INSERT INTO hosts(hostname) VALUES ('h')"), Error);
  EXPECT_NO_THROW(db.exec("INSERT INTO hosts(hostname) VALUES ('h')"));
  Statement s = reader.prepare("SELECT hostname FROM hosts");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.column_text(0), "h");
}

TEST(StoreInMemory, WriterWithoutIndexesBuildsNone) {
  Database db = Database::create_in_memory();
  {
    WriterOptions options;
    options.build_indexes = false;
    Writer writer(db.another_connection(), options);
    Capture capture;
    capture.kind = CaptureKind::imported;
    int64_t id = writer.add_capture(capture);
    writer.add(kernel(1, 2, id));
    writer.finish();
  }
  EXPECT_EQ(count_indexes(db), 0);
  // Queries still work without index support, window queries included.
  Reader reader(std::move(db));
  EventFilter filter;
  filter.window = {0, 10};
  EXPECT_EQ(reader.kernels(filter).size(), 1u);
}
