// The Thrift pieces of the connection limits (guarded_transport.h) on real sockets: a listener
// that outlives accept(2) failing with EMFILE, and a framed transport whose request deadline holds
// however slowly the bytes drip.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>

#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>

#include "fleetscope/daemon/guarded_transport.h"
#include "sanitizers.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

using apache::thrift::transport::TServerSocket;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;
using namespace std::chrono_literals;

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

TEST(GuardedTransport, AcceptFailingForWantOfDescriptorsBacksOffAndTheListenerLives) {
  if (test_support::kUnderUndefinedBehaviorSanitizer)
    GTEST_SKIP() << test_support::kVptrCheckNeedsADescriptor;
  test_support::TempDir dir;
  const std::string path = dir.file("listener.sock");
  auto limiter = ConnectionLimiter::create({});
  AdmittingServerSocket<TServerSocket> server(Admission{limiter, "test listener", nullptr}, path);
  server.listen();
  int client = connect_unix(path);  // waits in the backlog
  // No descriptor left: the lowest free one is at the soft limit.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  int lowest_free = ::dup(0);
  ::close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  try {
    server.accept();
    ::setrlimit(RLIMIT_NOFILE, &saved);
    FAIL() << "accept() succeeded without a free descriptor";
  } catch (const TTransportException& e) {
    ::setrlimit(RLIMIT_NOFILE, &saved);
    // TIMED_OUT: Thrift's server loop goes on (UNKNOWN ended it: "TServerTransport died").
    EXPECT_EQ(e.getType(), TTransportException::TIMED_OUT) << e.what();
  }
  // Descriptors again: the same listener accepts the waiting client.
  auto accepted = server.accept();
  ASSERT_TRUE(accepted);
  EXPECT_TRUE(server.take_ticket(accepted.get()));
  EXPECT_FALSE(server.take_ticket(accepted.get()));  // once
  accepted->close();
  ::close(client);
  server.close();
}

struct FramedPair {
  std::shared_ptr<ConnectionLimiter> limiter = ConnectionLimiter::create([] {
    ConnectionLimits limits;
    limits.request_deadline = 400ms;
    limits.max_buffered_bytes = 1 << 20;
    return limits;
  }());
  int client = -1;
  std::shared_ptr<GuardedFramedTransport> transport;
  FramedPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client = fds[1];
    auto ticket = limiter->admit(1000, fds[0]);
    transport =
        std::make_shared<GuardedFramedTransport>(std::make_shared<TSocket>(fds[0]), nullptr, ticket,
                                                 4096, 5000, limiter->limits().request_deadline);
  }
  ~FramedPair() {
    transport->close();
    ::close(client);
  }
  void send(const std::string& bytes) const {
    ASSERT_EQ(::send(client, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
};

std::string frame_header(uint32_t size) {
  std::string header(4, '\0');
  for (int i = 0; i < 4; ++i) header[i] = static_cast<char>((size >> (8 * (3 - i))) & 0xff);
  return header;
}

TEST(GuardedTransport, AFrameArrivingInPiecesIsReadWhole) {
  FramedPair pair;
  std::thread sender([&] {
    pair.send(frame_header(10).substr(0, 2));
    std::this_thread::sleep_for(20ms);
    pair.send(frame_header(10).substr(2) + "hello");
    std::this_thread::sleep_for(20ms);
    pair.send("world");
  });
  uint8_t body[10];
  pair.transport->readAll(body, sizeof body);
  sender.join();
  EXPECT_EQ(std::string(reinterpret_cast<char*>(body), sizeof body), "helloworld");
  pair.transport->readEnd();
  EXPECT_EQ(pair.limiter->counts().buffered_bytes, 0);  // given back with the message
}

TEST(GuardedTransport, ADripFeedingClientIsCutOffAtTheRequestDeadline) {
  FramedPair pair;
  pair.send(frame_header(1000));
  std::atomic<bool> stop{false};
  std::thread dripper([&] {
    // A byte every 50 ms: each recv() is quick, the request never completes.
    while (!stop) {
      if (::send(pair.client, "x", 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(50ms);
    }
  });
  const auto started = std::chrono::steady_clock::now();
  uint8_t byte;
  try {
    pair.transport->read(&byte, 1);
    FAIL() << "a frame that never completed was read";
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::TIMED_OUT) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - started;
  stop = true;
  dripper.join();
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 3s);
}

TEST(GuardedTransport, ADeclaredSizeOverTheLimitIsRefusedBeforeAnyBodyIsRead) {
  FramedPair pair;
  pair.send(frame_header(1u << 30));
  uint8_t byte;
  try {
    pair.transport->read(&byte, 1);
    FAIL();
  } catch (const TTransportException& e) {
    EXPECT_EQ(e.getType(), TTransportException::CORRUPTED_DATA);
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of 4096"), std::string::npos);
  }
  EXPECT_EQ(pair.limiter->counts().buffered_bytes, 0);
}

}  // namespace
}  // namespace fleetscope::daemon
