#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fleetscope/daemon/config.h"
#include "fleetscope/daemon/host_store.h"
#include "fleetscope/daemon/peer.h"
#include "fleetscope/store/database.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

TEST(Config, FileThenFlagsWithErrorsNamingFileAndLine) {
  test_support::TempDir dir;
  std::string path = dir.file("fleetscoped.conf");
  std::ofstream(path) << "# comment\n  database = \"/srv/h.db\"  # "
                         "trailing\nsample-interval-ms=250\ntcp_port = 7000\n";
  DaemonConfig config;
  std::ostringstream out, err;
  ASSERT_EQ(parse_command_line({"--config", path, "--tcp-port", "7001"}, config, out, err),
            std::nullopt)
      << err.str();
  EXPECT_EQ(config.database, "/srv/h.db");
  EXPECT_EQ(config.sample_interval_ms, 250);
  EXPECT_EQ(config.tcp_port, 7001);  // the flag wins
  EXPECT_EQ(config.config_file, path);

  std::ofstream(path) << "database = x\nsample_interval_ms = fast\n";
  DaemonConfig bad;
  EXPECT_EQ(parse_command_line({"--config", path}, bad, out, err), 1);
  EXPECT_NE(err.str().find(path + ":2: 'sample_interval_ms' expects an integer, got 'fast'"),
            std::string::npos)
      << err.str();
  EXPECT_THROW(apply_config_text(bad, "tcp_port = 70000\n", "f"), std::runtime_error);
  EXPECT_THROW(apply_config_text(bad, "just words\n", "f"), std::runtime_error);
  try {
    apply_config_text(bad, "\n\nbogus = 1\n", "f.conf");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "f.conf:3: unknown key 'bogus'");
  }
  std::ostringstream usage_err;
  EXPECT_EQ(parse_command_line({"--no-such-flag"}, bad, out, usage_err), 2);
  EXPECT_EQ(parse_command_line({"--help"}, bad, out, usage_err), 0);
  EXPECT_NE(out.str().find("--prometheus-port"), std::string::npos);
}

TEST(Config, SharingGateSocketAndLaneDirectoryKeys) {
  // Defaults: the gate beside the API socket; ledgers in $FLEETSCOPE_LANE_DIR, else /dev/shm.
  DaemonConfig config;
  config.socket = "/run/fs/api.sock";
  EXPECT_EQ(gate_socket_path(config), "/run/fs/gate.sock");
  EXPECT_EQ(lane_directory_path(config, nullptr), "/dev/shm");
  EXPECT_EQ(lane_directory_path(config, ""), "/dev/shm");
  EXPECT_EQ(lane_directory_path(config, "/tmp/lanes"), "/tmp/lanes");
  // The keys, from a file and from flags (the flag wins), take precedence over the variable.
  test_support::TempDir dir;
  const std::string path = dir.file("fleetscoped.conf");
  std::ofstream(path) << "gate_socket = /run/fs/turns.sock\nlane_directory = /srv/ledgers\n";
  std::ostringstream out, err;
  ASSERT_EQ(parse_command_line({"--config", path}, config, out, err), std::nullopt) << err.str();
  EXPECT_EQ(gate_socket_path(config), "/run/fs/turns.sock");
  EXPECT_EQ(lane_directory_path(config, "/tmp/lanes"), "/srv/ledgers");
  ASSERT_EQ(parse_command_line({"--config", path, "--lane-directory", "/x"}, config, out, err),
            std::nullopt)
      << err.str();
  EXPECT_EQ(config.lane_directory, "/x");
  std::ostringstream help;
  EXPECT_EQ(parse_command_line({"--help"}, config, help, err), 0);
  EXPECT_NE(help.str().find("--gate-socket"), std::string::npos);
  EXPECT_NE(help.str().find("--lane-directory"), std::string::npos);
}

TEST(Peer, UnixSocketPeerIsThisProcess) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  auto peer = peer_of_unix_socket(fds[0]);
  ASSERT_TRUE(peer);
  EXPECT_EQ(peer->pid, getpid());
  EXPECT_EQ(peer->uid, getuid());
  close(fds[0]);
  close(fds[1]);
  EXPECT_FALSE(peer_of_unix_socket(-1));
  EXPECT_TRUE((Caller{1, 0}).may_access(1234));
  EXPECT_FALSE((Caller{1, 1000}).may_access(1001));
}

TEST(HostStore, RetentionDropsOldestCapturesAndDownsamplesSamples) {
  test_support::TempDir dir;
  const int64_t minute = 60'000'000'000, day = 24 * 60 * minute;
  const int64_t now = 100 * day;
  {
    HostStore store(dir.file("host.db"), "node");
    for (int i = 0; i < 3; ++i) {
      int64_t id = store.open_capture("job", now - (40 - i * 20) * day);  // 40, 20 and 0 days old
      rpc::RecordBatch batch;
      batch.capture_id = id;
      rpc::KernelRecord k;
      k.start_ns = now - (40 - i * 20) * day;
      k.end_ns = k.start_ns + 10;
      k.demangledName = "k";
      k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
      batch.kernels.assign(1000, k);
      store.commit_batch(batch, id);
      store.close_capture(id, k.end_ns, 0, 0, std::nullopt);
    }
    std::vector<store::DeviceSample> samples;
    for (int64_t s = 0; s < 120; ++s)  // two minutes of 1 Hz samples, two days old
      samples.push_back({now - 2 * day + s * 1'000'000'000, std::nullopt, 0, "gpu_util_pct", 0,
                         static_cast<double>(s % 2 ? 100 : 0), std::nullopt});
    samples.push_back({now - minute, std::nullopt, 0, "gpu_util_pct", 0, 5.0, std::nullopt});
    store.add_device_samples(samples);
    HostStore::RetentionPolicy policy;
    policy.max_age_ns = 30 * day;
    policy.downsample_after_ns = day;
    auto result = store.apply_retention(policy, now);
    EXPECT_EQ(result.captures_dropped, 1);
    EXPECT_EQ(result.samples_downsampled, 120);
    policy = {};
    policy.max_bytes = 1;  // everything must go, oldest first
    result = store.apply_retention(policy, now);
    EXPECT_EQ(result.captures_dropped, 2);
  }
  auto db = store::Database::open(dir.file("host.db"));
  auto count = [&](const std::string& sql) {
    auto s = db.prepare(sql);
    s.step();
    return s.column_int(0);
  };
  EXPECT_EQ(count("SELECT count(*) FROM captures"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM device_samples"), 3);  // two 1-minute means + the fresh one
  auto mean = db.prepare("SELECT avg(value) FROM device_samples WHERE ts < ?");
  mean.bind(1, now - day);
  mean.step();
  EXPECT_DOUBLE_EQ(mean.column_double(0), 50.0);
}

}  // namespace
}  // namespace fleetscope::daemon
