// fleetscoped outside systemd: the folders of its database and sockets are created when missing,
// and a folder that cannot be created is named with the reason.
#include "fleetscope/daemon/state_directories.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

namespace fs = std::filesystem;

TEST(StateDirectories, CreatesTheFoldersOfTheDatabaseAndTheSockets) {
  test_support::TempDir dir;
  DaemonConfig config;
  config.database = dir.file("var/lib/fleetscope/host.db");
  config.socket = dir.file("run/fleetscope/fleetscoped.sock");
  config.agent_socket = dir.file("run/agents/agent.sock");
  config.gate_socket = dir.file("run/gate/gate.sock");
  prepare_state_directories(config);
  EXPECT_TRUE(fs::is_directory(dir.file("var/lib/fleetscope")));
  EXPECT_TRUE(fs::is_directory(dir.file("run/fleetscope")));
  EXPECT_TRUE(fs::is_directory(dir.file("run/agents")));
  EXPECT_TRUE(fs::is_directory(dir.file("run/gate")));
  EXPECT_FALSE(fs::exists(config.database)) << "only folders are made; the store creates the file";
  prepare_state_directories(config);  // existing folders are fine
}

TEST(StateDirectories, NamesTheFolderItCannotCreateAndWhatItIsFor) {
  test_support::TempDir dir;
  std::ofstream(dir.file("plain-file")) << "not a folder";
  DaemonConfig config;
  config.database = dir.file("plain-file/state/host.db");
  config.socket = dir.file("api.sock");
  config.agent_socket = dir.file("agent.sock");
  try {
    prepare_state_directories(config);
    FAIL() << "a folder below a regular file was accepted";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("cannot create directory " + dir.file("plain-file/state") +
                                " (for the database " + config.database + "): ",
                            0),
              0u)
        << message;
  }
}

}  // namespace
}  // namespace fleetscope::daemon
