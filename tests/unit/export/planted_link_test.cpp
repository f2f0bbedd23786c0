// An output's temporary file is created new, never opened through a symbolic link planted under
// its name (common/new_file.h): ChromeTraceFile used fopen/gzopen, which followed such a link and
// wrote the trace into the file it named (in a shared folder such as /tmp, any file of the user
// running the export, or of root).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fleetscope/common/new_file.h"
#include "fleetscope/export/event_sink.h"
#include "fleetscope/store/error.h"

namespace fleetscope::exporter {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "fleetscope-link-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PlantedLink, ChromeTraceFileDoesNotWriteThroughALink) {
  Scratch scratch;
  const fs::path victim = scratch.dir / "victim.txt";
  std::ofstream(victim) << "precious";
  for (bool gzip : {false, true}) {
    const fs::path planted = scratch.dir / (gzip ? "out.json.gz.tmp" : "out.json.tmp");
    fs::create_symlink(victim, planted);
    try {
      ChromeTraceFile file(planted.string(), gzip);
      file.begin_events();
      file.write_event("{}");
      file.finish();
      ADD_FAILURE() << "wrote through the link " << planted;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot create output file"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(bytes_of(victim), "precious");
    EXPECT_TRUE(fs::is_symlink(planted));
  }
}

TEST(PlantedLink, CreateNewFileRefusesLinksAndExistingNames) {
  Scratch scratch;
  const fs::path victim = scratch.dir / "victim.txt";
  std::ofstream(victim) << "precious";
  const fs::path link = scratch.dir / "link";
  fs::create_symlink(victim, link);
  EXPECT_EQ(common::create_new_file(link.string()), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(common::create_new_file(victim.string()), -1);
  EXPECT_EQ(bytes_of(victim), "precious");
  const int fd = common::create_new_file((scratch.dir / "new").string());
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(common::write_all(fd, "data"));
  ::close(fd);
  EXPECT_EQ(bytes_of(scratch.dir / "new"), "data");
}

}  // namespace
}  // namespace fleetscope::exporter
