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
  // With --force: without it an existing output is refused first (ExistingOutput below).
  expect_refused({"export", db, "-o", db, "--quiet", "--force"}, db, db);
  expect_refused({"report", db, "-o", db, "--format", "html", "--force"}, db, db);
  expect_refused({"analyze", db, "--no-store", "-o", db, "--force"}, db, db);
  const std::string trace = dir.file("trace.json.gz");
  std::filesystem::copy_file(kKineto, trace);
  expect_refused({"import", trace, "-o", trace, "--force"}, trace, trace);
  expect_refused({"export", trace, "-o", trace, "--quiet", "--force"}, trace, trace);
  // Another name of the same file.
  const std::string hard = dir.file("hard.db");
  std::filesystem::create_hard_link(db, hard);
  expect_refused({"export", db, "-o", hard, "--quiet", "--force"}, hard, db);
  const std::string soft = dir.file("soft.db");
  std::filesystem::create_symlink(db, soft);
  expect_refused({"report", db, "-o", soft, "--format", "html", "--force"}, soft, db);
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

// Every command that writes an output file refuses an existing one unless --force is given, as
// `import` and `run` do (and nsys -o without --force-overwrite): `export ... -o FILE` and
// `report ... -o FILE` replaced it silently. The file is left byte for byte; --force replaces it.
TEST(ExistingOutput, RefusedWithoutForceReplacedWithIt) {
  test_support::TempDir dir;
  const std::string db = one_capture_db(dir);
  struct Case {
    std::vector<std::string> args;
    std::string output;
  };
  const std::vector<Case> cases = {
      {{"export", db, "--quiet", "-o"}, dir.file("out.json")},
      {{"report", db, "-o"}, dir.file("out.html")},
      {{"report", db, "--format", "json", "-o"}, dir.file("out-report.json")},
      {{"analyze", db, "--no-store", "-o"}, dir.file("out.txt")},
      {{"import", kKineto, "-o"}, dir.file("out.db")},
  };
  for (const Case& c : cases) {
    std::ofstream(c.output) << "earlier";
    std::vector<std::string> args = c.args;
    args.push_back(c.output);
    const CliRun refused = run_cli(args);
    EXPECT_EQ(refused.code, 1) << args[0] << ": " << refused.err;
    EXPECT_NE(
        refused.err.find("error: " + c.output + ": already exists (use --force to replace it)"),
        std::string::npos)
        << args[0] << ": " << refused.err;
    EXPECT_EQ(bytes_of(c.output), "earlier") << args[0];
    args.push_back("--force");
    const CliRun forced = run_cli(args);
    EXPECT_EQ(forced.code, 0) << args[0] << ": " << forced.err;
    EXPECT_NE(bytes_of(c.output), "earlier") << args[0];
  }
  // A link to nowhere is an existing output too (the rename would replace the link).
  const std::string dangling = dir.file("dangling.json");
  std::filesystem::create_symlink(dir.file("nowhere"), dangling);
  EXPECT_EQ(run_cli({"export", db, "--quiet", "-o", dangling}).code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("nowhere")));
}

// An output named like the input's SQLite side file (-wal, -shm, -journal) would be taken as the
// input's log on its next open: refused before anything is written, --force or not, whether the
// side file exists or not, under the input's name or another path to it.
TEST(ExistingOutput, TheInputsSideFilesAreRefused) {
  test_support::TempDir dir;
  const std::string db = one_capture_db(dir);
  const std::string before = bytes_of(db);
  std::filesystem::create_directory(dir.file("sub"));
  for (const std::string suffix : {"-wal", "-shm", "-journal"}) {
    for (const std::string& output :
         {db + suffix, dir.path().string() + "/sub/../run.db" + suffix}) {
      for (const std::vector<std::string>& args :
           {std::vector<std::string>{"export", db, "--quiet", "-o", output, "--force"},
            {"export", db, "--quiet", "-o", output},
            {"report", db, "--format", "json", "-o", output, "--force"},
            {"analyze", db, "--no-store", "-o", output, "--force"}}) {
        const CliRun r = run_cli(args);
        EXPECT_EQ(r.code, 1) << args[0] << " " << output << ": " << r.err;
        EXPECT_NE(r.err.find("error: cannot write " + output + ": it is the name of the " +
                             suffix.substr(1) + " file of the input " + db),
                  std::string::npos)
            << args[0] << ": " << r.err;
        EXPECT_FALSE(std::filesystem::exists(db + suffix)) << args[0] << " " << output;
      }
    }
  }
  EXPECT_TRUE(bytes_of(db) == before);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u);  // run.db, sub
  // import too (an nsys SQLite export has side files; the names are refused for every input).
  test_support::TempDir other;
  const std::string trace = other.file("trace.json.gz");
  std::filesystem::copy_file(kKineto, trace);
  const CliRun imported = run_cli({"import", trace, "-o", trace + "-wal", "--force"});
  EXPECT_EQ(imported.code, 1) << imported.err;
  EXPECT_NE(imported.err.find("error: cannot write " + trace + "-wal: it is the name of the wal"),
            std::string::npos)
      << imported.err;
  EXPECT_FALSE(std::filesystem::exists(trace + "-wal"));
}

}  // namespace
