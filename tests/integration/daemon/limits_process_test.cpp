// fleetscoped under a hostile local client, in a real process over real sockets: descriptors
// exhausted, half-sent frames, drip-fed requests and scrapes, SIGTERM while clients hang, the
// modes of the files it makes. Every input is built here.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <fstream>
#include <regex>

#include "fleetscope/store/database.h"
#include "harness.h"
#include "sanitizers.h"

namespace fleetscope::test_support {
namespace {

using namespace std::chrono_literals;

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_tcp(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the daemon closed this connection (end-of-file or reset), waiting at most `timeout`.
bool closed_by_daemon(int fd, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

std::string frame_header(uint32_t size) {
  uint32_t network = htonl(size);
  return std::string(reinterpret_cast<char*>(&network), sizeof network);
}

int64_t rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// The port of the Prometheus endpoint from the daemon's log line.
int prometheus_port(Child& daemon) {
  auto line = daemon.wait_line("fleetscoped: Prometheus metrics on", 10s);
  if (!line) return -1;
  std::smatch match;
  if (!std::regex_search(*line, match, std::regex(R"(:(\d+)/metrics)"))) return -1;
  return std::stoi(match[1]);
}

TEST(DaemonLimits, ThreeHundredConnectionsUnderUlimit256LeaveStatusWorking) {
  // The daemon under test is built with the same sanitizers as this test.
  if (test_support::kUnderUndefinedBehaviorSanitizer)
    GTEST_SKIP() << test_support::kVptrCheckNeedsADescriptor;
  DaemonUnderTest daemon;
  daemon.launcher = {"/bin/sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\""};
  daemon.start();
  std::vector<int> held;
  for (int i = 0; i < 300; ++i) {
    int fd = connect_unix(daemon.api_socket);
    ASSERT_GE(fd, 0) << "connection " << i;
    held.push_back(fd);
  }
  // While all 300 are held open, a new caller is served: the daemon gave idle places up for it
  // (it fits its limits to 256 descriptors) and its listener is alive.
  {
    ApiClient api(daemon.api_socket);
    rpc::DaemonStatus status;
    api->status(status);
    EXPECT_EQ(status.caller_uid, static_cast<int32_t>(getuid()));
  }
  int closed = 0;
  for (int fd : held) closed += closed_by_daemon(fd, 10ms) ? 1 : 0;
  EXPECT_GE(closed, 300 - 192) << "the daemon cannot hold more than its limit";
  for (int fd : held) ::close(fd);
  ApiClient again(daemon.api_socket);
  rpc::DaemonStatus status;
  again->status(status);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(DaemonLimits, HalfSentFramesCostTheReadBudgetOnlyAndEndAtTheDeadline) {
  DaemonUnderTest daemon;
  daemon.start({"--request-deadline-ms", "1500", "--max-frame-bytes", "4194304",
                "--max-buffered-bytes", "8388608"});
  const int64_t before = rss_kib(daemon.process->pid());
  ASSERT_GT(before, 0);
  // 20 connections each declaring a 4 MiB record batch and sending all of it but the last byte:
  // without a budget the daemon would buffer 80 MiB.
  const std::string body((4u << 20) - 1, 'b');
  std::vector<int> senders;
  std::vector<size_t> sent;
  for (int i = 0; i < 20; ++i) {
    int fd = connect_unix(daemon.agent_socket);
    ASSERT_GE(fd, 0);
    std::string header = frame_header(4u << 20);
    ASSERT_EQ(::send(fd, header.data(), header.size(), MSG_NOSIGNAL), 4);
    senders.push_back(fd);
    sent.push_back(0);
  }
  const auto stop_pushing = std::chrono::steady_clock::now() + 1s;
  while (std::chrono::steady_clock::now() < stop_pushing) {
    for (size_t i = 0; i < senders.size(); ++i) {
      if (sent[i] >= body.size()) continue;
      ssize_t n = ::send(senders[i], body.data() + sent[i], body.size() - sent[i],
                         MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent[i] += static_cast<size_t>(n);
    }
    std::this_thread::sleep_for(5ms);
  }
  const int64_t during = rss_kib(daemon.process->pid());
  EXPECT_LT(during - before, 32 * 1024) << "RSS grew from " << before << " to " << during << " KiB";
  // A client dripping a byte every 200 ms into a small request.
  int dripper = connect_unix(daemon.api_socket);
  std::string request = frame_header(100);
  ASSERT_EQ(::send(dripper, request.data(), request.size(), MSG_NOSIGNAL), 4);
  const auto drip_start = std::chrono::steady_clock::now();
  bool dripper_closed = false;
  while (std::chrono::steady_clock::now() - drip_start < 10s) {
    if (::send(dripper, "d", 1, MSG_NOSIGNAL) != 1 || closed_by_daemon(dripper, 200ms)) {
      dripper_closed = true;
      break;
    }
  }
  EXPECT_TRUE(dripper_closed);
  EXPECT_LT(std::chrono::steady_clock::now() - drip_start, 5s);
  // Every half-sent frame is given up at its deadline; the daemon still answers.
  for (int fd : senders) EXPECT_TRUE(closed_by_daemon(fd, 10s));
  for (int fd : senders) ::close(fd);
  ::close(dripper);
  ApiClient api(daemon.api_socket);
  rpc::DaemonStatus status;
  api->status(status);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(DaemonLimits, ScrapesAreServedBesideASlowClientAndSigtermWaitsForNoClient) {
  DaemonUnderTest daemon;
  // A deadline far longer than the test: only stopping listeners first ends it in time.
  daemon.start({"--prometheus-port", "0", "--request-deadline-ms", "60000"});
  const int port = prometheus_port(*daemon.process);
  ASSERT_GT(port, 0);
  int slow_scrape = connect_tcp(port);
  ASSERT_GE(slow_scrape, 0);
  ASSERT_EQ(::send(slow_scrape, "GET /met", 8, MSG_NOSIGNAL), 8);
  // Another scrape is answered at once.
  int scrape = connect_tcp(port);
  const std::string get = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(scrape, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string answer;
  char buffer[4096];
  pollfd p{scrape, POLLIN, 0};
  while (::poll(&p, 1, 2000) > 0) {
    ssize_t n = ::recv(scrape, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("fleetscope_agents"), std::string::npos);
  ::close(scrape);
  // A half-sent API request too.
  int half_request = connect_unix(daemon.api_socket);
  ASSERT_EQ(::send(half_request, "\0\0", 2, MSG_NOSIGNAL), 2);
  const auto asked = std::chrono::steady_clock::now();
  daemon.process->signal(SIGTERM);
  auto status = daemon.process->wait_exit(10s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 5s);
  ::close(slow_scrape);
  ::close(half_request);
}

TEST(DaemonLimits, TheHostDatabaseIsReadableByNoOtherUser) {
  DaemonUnderTest daemon;
  {
    // One left world-readable by an earlier version.
    auto db = store::Database::create(daemon.database);
  }
  ::chmod(daemon.database.c_str(), 0644);
  const mode_t before = ::umask(022);
  daemon.start();
  ::umask(before);
  ApiClient api(daemon.api_socket);
  rpc::DaemonStatus status;
  api->status(status);
  for (const char* suffix : {"", "-wal"}) {
    struct stat info {};
    ASSERT_EQ(::stat((daemon.database + suffix).c_str(), &info), 0) << suffix;
    EXPECT_EQ(info.st_mode & 0027, 0u) << suffix << " mode " << std::oct << info.st_mode;
  }
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(DaemonLimits, ADatabaseThatCannotBeClosedEndsTheDaemonWithAMessageNotAnAbort) {
  DaemonUnderTest daemon;
  // A process on GPU 0 (the NVML stand-in's list), so every metrics window has rows.
  daemon.start({"--metrics-window-s", "1"},
               {"FLEETSCOPE_NVML_STANDIN_PROCESSES=0:4242:1048576:50"});
  // Rows to write at the end, waited for rather than slept on: the first 1 s window's
  // workflow_metrics rows in the file. By then the sampler has queued device samples since its
  // first tick's commit (the next commit is an hour away), and the next window is filling.
  const auto window_written = [&] {
    try {
      auto db = store::Database::open(daemon.database);
      auto count = db.prepare("SELECT count(*) FROM workflow_metrics");
      return count.step() && count.column_int(0) > 0;
    } catch (const std::exception&) {
      return false;  // busy, or not written yet
    }
  };
  for (const auto deadline = std::chrono::steady_clock::now() + 10s; !window_written();
       std::this_thread::sleep_for(20ms))
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no metrics window reached the file";
  {
    // The file's header overwritten under the running daemon (a disk fault, a stray writer).
    std::fstream file(daemon.database, std::ios::in | std::ios::out | std::ios::binary);
    const std::string garbage(100, '\xff');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  daemon.process->signal(SIGTERM);
  auto failed = daemon.process->wait_line("fleetscoped: closing the database failed", 10s);
  ASSERT_TRUE(failed);
  EXPECT_NE(failed->find(daemon.database), std::string::npos) << *failed;
  auto status = daemon.process->wait_exit(10s);
  ASSERT_TRUE(status);
  ASSERT_TRUE(WIFEXITED(*status)) << "ended by signal " << WTERMSIG(*status);
  EXPECT_EQ(WEXITSTATUS(*status), 1);
}

}  // namespace
}  // namespace fleetscope::test_support
