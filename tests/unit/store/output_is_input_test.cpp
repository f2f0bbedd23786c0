// No command writes its output over the file it reads (store/input_files.h): `export run.db -o
// run.db` replaced the database with the JSON trace, `report` with the HTML page, `import x.json -o
// x.json --force` the trace with a database. Each is now refused before anything is written,
// naming the output, exit 1, the input byte for byte as it was; the same file under another name
// (a hard link, a symbolic link) is the same input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_run.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "fleetscope/store/input_files.h"
#include "fleetscope/store/writer.h"
#include "temp_dir.h"

using namespace fleetscope;

namespace {

using test_support::CliRun;
using test_support::run_cli;

const std::string kKineto =
    std::string(FLEETSCOPE_SHARED_DATA) +
    "/traces/kineto/hta-critical_path_cuda_event_sync_event_sync_trace.json.gz";

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string one_capture_db(const test_support::TempDir& dir) {
  const std::string path = dir.file("run.db");
  store::Writer w(store::Database::create(path));
  const int64_t cap = w.add_capture({.source = "test", .start_ns = 0, .end_ns = 1'000'000'000});
  store::Kernel k;
  k.start = 100, k.end = 200, k.captureId = cap, k.demangledName = "k";
  w.add(k);
  w.finish();
  return path;
}

void expect_refused(const std::vector<std::string>& args, const std::string& output,
                    const std::string& input) {
  const std::string before = bytes_of(input);
  const CliRun r = run_cli(args);
  EXPECT_EQ(r.code, 1) << args[0] << ": " << r.err;
  EXPECT_NE(r.err.find("error: cannot write " + output + ": it is the input"), std::string::npos)
      << args[0] << ": " << r.err;
  EXPECT_TRUE(bytes_of(input) == before) << args[0] << " changed " << input;
}

TEST(OutputIsInput, EveryWritingCommandRefusesToReplaceItsInput) {
  test_support::TempDir dir;
  const std::string db = one_capture_db(dir);
  expect_refused({"export", db, "-o", db, "--quiet"}, db, db);
  expect_refused({"report", db, "-o", db, "--format", "html"}, db, db);
  expect_refused({"analyze", db, "--no-store", "-o", db}, db, db);
  const std::string trace = dir.file("trace.json.gz");
  std::filesystem::copy_file(kKineto, trace);
  expect_refused({"import", trace, "-o", trace, "--force"}, trace, trace);
  expect_refused({"export", trace, "-o", trace, "--quiet"}, trace, trace);
  // Another name of the same file.
  const std::string hard = dir.file("hard.db");
  std::filesystem::create_hard_link(db, hard);
  expect_refused({"export", db, "-o", hard, "--quiet"}, hard, db);
  const std::string soft = dir.file("soft.db");
  std::filesystem::create_symlink(db, soft);
  expect_refused({"report", db, "-o", soft, "--format", "html"}, soft, db);
  // Nothing was left beside them, and another output is written as before.
  EXPECT_EQ(run_cli({"export", db, "-o", dir.file("out.json"), "--quiet"}).code, 0);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 5u);  // run.db, trace.json.gz, hard.db, soft.db, out.json
}

// An input deleted since it was read frees its inode number for a new file: that file is not the
// input (the registry looks at the input again when asked).
TEST(OutputIsInput, AnInputDeletedSinceIsForgotten) {
  test_support::TempDir dir;
  const std::string gone = dir.file("gone.db");
  std::ofstream(gone) << "x";
  store::note_input_file(gone);
  EXPECT_EQ(store::input_file_at(gone), gone);
  std::filesystem::remove(gone);
  std::ofstream(dir.file("new.db")) << "y";
  EXPECT_EQ(store::input_file_at(dir.file("new.db")), std::nullopt);
  EXPECT_EQ(store::input_file_at(gone), std::nullopt);
}

}  // namespace
