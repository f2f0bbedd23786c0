// The TLS listener's settings: the CN -> uid map, loopback detection, and the combined check that
// refuses half a TLS configuration or a plain TCP listener outside loopback.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "fleetscope/daemon/tls_listener.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

TEST(TlsIdentities, NamesMapToUidsAndTheDefaultCoversTheRest) {
  auto map = parse_tls_identities(" alice:1000, ops team:0 ,", -1);
  EXPECT_EQ(map.uid_of("alice"), 1000u);
  EXPECT_EQ(map.uid_of("ops team"), 0u);
  EXPECT_FALSE(map.uid_of("bob")) << "no default: an unlisted CN is refused";
  EXPECT_EQ(parse_tls_identities("", 4242).uid_of("bob"), 4242u);
  for (const char* bad : {"alice", "alice=1000", ":1000", "alice:-1", "alice:12x", "alice:"})
    EXPECT_THROW(parse_tls_identities(bad, -1), std::invalid_argument) << bad;
}

TEST(TlsIdentities, LoopbackIsAll127Slash8) {
  EXPECT_TRUE(is_loopback_address("127.0.0.1"));
  EXPECT_TRUE(is_loopback_address("127.8.9.10"));
  EXPECT_FALSE(is_loopback_address("0.0.0.0"));
  EXPECT_FALSE(is_loopback_address("10.0.0.1"));
  EXPECT_FALSE(is_loopback_address("localhost"));
}

TEST(TlsListenerConfig, RefusesHalfATlsSetupAndPlainTcpOutsideLoopback) {
  DaemonConfig plain;
  plain.tcp_port = 9999;
  EXPECT_NO_THROW(check_listener_config(plain));
  plain.tcp_address = "0.0.0.0";
  EXPECT_THROW(check_listener_config(plain), std::runtime_error);
  plain.tcp_port = 0;  // no TCP listener at all: the address does not matter
  EXPECT_NO_THROW(check_listener_config(plain));
  plain.tcp_address = "not-an-address";
  EXPECT_THROW(check_listener_config(plain), std::runtime_error);

  test_support::TempDir dir;
  const std::string pem = dir.file("some.pem");
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\n";  // only readability is checked here
  DaemonConfig tls;
  tls.tcp_port = 9999;
  tls.tcp_address = "0.0.0.0";
  tls.tls_cert = tls.tls_key = pem;
  EXPECT_THROW(check_listener_config(tls), std::runtime_error) << "tls_ca missing";
  tls.tls_ca = "/nonexistent/ca.pem";
  EXPECT_THROW(check_listener_config(tls), std::runtime_error) << "unreadable file";
  tls.tls_ca = pem;
  EXPECT_NO_THROW(check_listener_config(tls)) << "with TLS any address may be served";
  tls.tls_client_uids = "alice";
  EXPECT_THROW(check_listener_config(tls), std::runtime_error);
  tls.tls_client_uids = "alice:1000";
  tls.tcp_port = 0;
  EXPECT_THROW(check_listener_config(tls), std::runtime_error) << "TLS without a TCP listener";
}

}  // namespace
}  // namespace fleetscope::daemon
