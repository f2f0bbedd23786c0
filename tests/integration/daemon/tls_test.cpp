// fleetscoped's TCP listener with TLS and client certificates, in a real daemon process: the test
// makes a CA, a server certificate and client certificates with the openssl program in a temporary
// directory, then checks who gets in (and as which user) over real TLS connections, with the
// generated Thrift client and with the `fleetscope` CLI.
#include <crypt.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>

#include "fleetscope/rpc/transport.h"
#include "harness.h"

namespace fleetscope::test_support {
namespace {

using namespace std::chrono_literals;

// A small PKI: ca signs the server (naming 127.0.0.1) and the clients alice and bob; rogue-ca,
// which the daemon does not trust, signs mallory.
struct Pki {
  TempDir dir;
  std::string file(const std::string& name) { return dir.file(name); }

  void openssl(std::vector<std::string> args) {
    args.insert(args.begin(), OPENSSL);
    auto result = run_program(args);
    if (result.exit_code != 0) throw std::runtime_error("openssl failed: " + result.output);
  }
  void authority(const std::string& name) {
    openssl({"req", "-x509", "-config", file("openssl.cnf"), "-extensions", "ca_ext", "-newkey",
             "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             file(name + ".key"), "-out", file(name + ".crt"), "-subj", "/CN=" + name, "-days",
             "2"});
  }
  void leaf(const std::string& name, const std::string& ca, const std::string& extensions) {
    openssl({"req", "-new", "-config", file("openssl.cnf"), "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", file(name + ".key"), "-out",
             file(name + ".csr"), "-subj", "/CN=" + name});
    openssl({"x509", "-req", "-in", file(name + ".csr"), "-CA", file(ca + ".crt"), "-CAkey",
             file(ca + ".key"), "-set_serial", std::to_string(++serial), "-days", "2", "-out",
             file(name + ".crt"), "-extfile", file("openssl.cnf"), "-extensions", extensions});
  }
  Pki() {
    std::ofstream(file("openssl.cnf")) << "[req]\n"
                                          "distinguished_name = dn\n"
                                          "[dn]\n"
                                          "[ca_ext]\n"
                                          "basicConstraints = critical,CA:true\n"
                                          "keyUsage = critical,keyCertSign,cRLSign\n"
                                          "subjectKeyIdentifier = hash\n"
                                          "[server_ext]\n"
                                          "basicConstraints = CA:false\n"
                                          "subjectAltName = IP:127.0.0.1,DNS:localhost\n"
                                          "extendedKeyUsage = serverAuth\n"
                                          "[client_ext]\n"
                                          "basicConstraints = CA:false\n"
                                          "extendedKeyUsage = clientAuth\n";
    authority("ca");
    authority("rogue-ca");
    leaf("server", "ca", "server_ext");
    leaf("alice", "ca", "client_ext");
    leaf("bob", "ca", "client_ext");
    leaf("mallory", "rogue-ca", "client_ext");
  }
  rpc::TlsClientFiles client(const std::string& name) {
    return {name.empty() ? "" : file(name + ".crt"), name.empty() ? "" : file(name + ".key"),
            file("ca.crt")};
  }
  int serial = 1;
};

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

bool tcp_accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

// The status RPC over TCP (TLS when `tls` is enabled); the caller uid the daemon saw, or the
// error that refused the connection.
struct Answer {
  std::optional<int32_t> caller_uid;
  std::string error;
};
Answer status_over(int port, const rpc::TlsClientFiles& tls) {
  // OpenSSL writes to the socket with write(2): a refused client writing after the daemon hung up
  // would get SIGPIPE (Thrift's TSSLSocket leaves ignoring it to the program).
  signal(SIGPIPE, SIG_IGN);
  Answer answer;
  try {
    auto transport = rpc::make_client_transport("127.0.0.1:" + std::to_string(port),
                                                rpc::TransportLimits{}, 5000, tls);
    rpc::FleetscopeHostClient client(rpc::make_protocol(transport, rpc::TransportLimits{}));
    transport->open();
    rpc::DaemonStatus status;
    client.status(status);
    answer.caller_uid = status.caller_uid;
    transport->close();
  } catch (const std::exception& e) {
    answer.error = e.what();
  }
  return answer;
}

TEST(DaemonTls, VerifiedClientCertificatesActAsTheirMappedUserAndNothingElseGetsIn) {
  Pki pki;
  DaemonUnderTest daemon;
  const int port = free_port();
  const std::string me = std::to_string(getuid());
  daemon.start({"--tcp-port", std::to_string(port), "--tls-cert", pki.file("server.crt"),
                "--tls-key", pki.file("server.key"), "--tls-ca", pki.file("ca.crt"),
                "--tls-client-uids", "alice:" + me + ", ops:0"});
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!tcp_accepts(port)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the TLS listener did not start";
    std::this_thread::sleep_for(20ms);
  }

  Answer alice = status_over(port, pki.client("alice"));
  ASSERT_TRUE(alice.caller_uid) << alice.error;
  EXPECT_EQ(*alice.caller_uid, static_cast<int32_t>(getuid())) << "alice's CN maps to this uid";

  Answer no_certificate = status_over(port, pki.client(""));
  EXPECT_FALSE(no_certificate.caller_uid) << "a client without a certificate got in";
  Answer other_authority = status_over(port, pki.client("mallory"));
  EXPECT_FALSE(other_authority.caller_uid) << "a certificate of an untrusted CA got in";
  Answer unmapped = status_over(port, pki.client("bob"));
  EXPECT_FALSE(unmapped.caller_uid) << "a CN with no uid (and no tls_default_uid) got in";
  Answer plain = status_over(port, rpc::TlsClientFiles{});
  EXPECT_FALSE(plain.caller_uid) << "a plain TCP client got in";

  // The CLI over TLS, and without a certificate.
  auto cli = run_program({FLEETSCOPE_CLI, "status", "--socket", "127.0.0.1:" + std::to_string(port),
                          "--tls-cert", pki.file("alice.crt"), "--tls-key", pki.file("alice.key"),
                          "--tls-ca", pki.file("ca.crt"), "--format", "json"});
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_NE(cli.output.find("\"caller_uid\": " + me), std::string::npos) << cli.output;
  auto refused = run_program({FLEETSCOPE_CLI, "status", "--socket",
                              "127.0.0.1:" + std::to_string(port), "--tls-ca", pki.file("ca.crt")});
  EXPECT_EQ(refused.exit_code, 1) << refused.output;

  // The refusals harmed nothing: alice still gets in, and the daemon stops cleanly.
  EXPECT_TRUE(status_over(port, pki.client("alice")).caller_uid);
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(DaemonTls, ADefaultUidAdmitsVerifiedCertificatesWhoseNameIsNotListed) {
  Pki pki;
  DaemonUnderTest daemon;
  const int port = free_port();
  daemon.start({"--tcp-port", std::to_string(port), "--tls-cert", pki.file("server.crt"),
                "--tls-key", pki.file("server.key"), "--tls-ca", pki.file("ca.crt"),
                "--tls-default-uid", "4242"});
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!tcp_accepts(port)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the TLS listener did not start";
    std::this_thread::sleep_for(20ms);
  }
  Answer bob = status_over(port, pki.client("bob"));
  ASSERT_TRUE(bob.caller_uid) << bob.error;
  EXPECT_EQ(*bob.caller_uid, 4242);
  EXPECT_FALSE(status_over(port, pki.client("mallory")).caller_uid) << "untrusted CA got in";
  EXPECT_EQ(daemon.stop(), 0);
}

ProgramResult start_daemon_expecting_failure(TempDir& dir, std::vector<std::string> extra) {
  std::vector<std::string> argv = {FLEETSCOPED,
                                   "--database",
                                   dir.file("host.db"),
                                   "--socket",
                                   dir.file("api.sock"),
                                   "--agent-socket",
                                   dir.file("agent.sock"),
                                   "--prometheus-port",
                                   "-1",
                                   "--nvml-library",
                                   NVML_STANDIN};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_program(argv, 10s);
}

TEST(DaemonTls, PlainTcpOutsideLoopbackAndIncompleteTlsSettingsAreRefusedAtStart) {
  TempDir dir;
  const std::string port = std::to_string(free_port());
  auto open_to_all =
      start_daemon_expecting_failure(dir, {"--tcp-port", port, "--tcp-address", "0.0.0.0"});
  EXPECT_EQ(open_to_all.exit_code, 1) << open_to_all.output;
  EXPECT_NE(open_to_all.output.find("needs TLS"), std::string::npos) << open_to_all.output;

  auto half = start_daemon_expecting_failure(dir, {"--tcp-port", port, "--tls-cert", "/etc/hosts"});
  EXPECT_EQ(half.exit_code, 1) << half.output;
  EXPECT_NE(half.output.find("tls_key is missing"), std::string::npos) << half.output;

  auto bad_map = start_daemon_expecting_failure(
      dir, {"--tcp-port", port, "--tls-cert", "/etc/hosts", "--tls-key", "/etc/hosts", "--tls-ca",
            "/etc/hosts", "--tls-client-uids", "alice=1000"});
  EXPECT_EQ(bad_map.exit_code, 1) << bad_map.output;
  EXPECT_NE(bad_map.output.find("tls_client_uids"), std::string::npos) << bad_map.output;
}

// crypt(3) of libxcrypt: a bcrypt hash for the web.yml the test writes.
std::string bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", 5, nullptr, 0, salt, sizeof salt))
    throw std::runtime_error("crypt_gensalt_rn: no bcrypt");
  crypt_data data{};
  const char* hash = crypt_rn(password.c_str(), salt, &data, sizeof data);
  if (!hash || hash[0] == '*') throw std::runtime_error("crypt_rn failed");
  return hash;
}

// curl's HTTP status for GET url (000 when no HTTP answer came) and the body.
std::pair<std::string, std::string> scrape(const std::vector<std::string>& options,
                                           const std::string& url) {
  std::vector<std::string> argv = {CURL, "-sS", "--max-time", "10", "-w", "\n%{http_code}\n"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(url);
  auto result = run_program(argv);
  // The status is a line of three digits ("-w" ends it with a newline: run_program keeps whole
  // lines); curl's own error lines (stderr) may come after it.
  std::string code;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);)
    if (line.size() == 3 && line.find_first_not_of("0123456789") == std::string::npos) code = line;
  return {code, result.output};
}

TEST(DaemonTls, ThePrometheusPageTakesTlsAndBasicAuthFromAWebYml) {
  if (std::string(CURL).empty()) GTEST_SKIP() << "curl is not installed (scripts/install-deps)";
  Pki pki;
  const std::string web = pki.file("web.yml");
  std::ofstream(web) << "tls_server_config:\n"
                        "  cert_file: server.crt\n"  // relative to web.yml's folder
                        "  key_file: server.key\n"
                        "basic_auth_users:\n"
                        "  alice: "
                     << bcrypt("s3cret") << "\n";
  DaemonUnderTest daemon;
  daemon.start({"--prometheus-port", "0", "--prometheus-web-config", web});
  auto line = daemon.process->wait_line("fleetscoped: Prometheus metrics on https://", 10s);
  ASSERT_TRUE(line);
  const std::string port =
      line->substr(line->rfind(':') + 1, line->find("/metrics") - line->rfind(':') - 1);
  const std::string url = "https://127.0.0.1:" + port + "/metrics";
  const std::vector<std::string> ca = {"--cacert", pki.file("ca.crt")};
  EXPECT_EQ(scrape(ca, url).first, "401");
  auto wrong = ca;
  wrong.insert(wrong.end(), {"-u", "alice:guess"});
  EXPECT_EQ(scrape(wrong, url).first, "401");
  auto right = ca;
  right.insert(right.end(), {"-u", "alice:s3cret"});
  auto [code, body] = scrape(right, url);
  EXPECT_EQ(code, "200") << body;
  EXPECT_NE(body.find("fleetscope_agents"), std::string::npos) << body;
  // Plain HTTP gets no page.
  EXPECT_NE(scrape({"-u", "alice:s3cret"}, "http://127.0.0.1:" + port + "/metrics").first, "200");
  EXPECT_EQ(daemon.stop(), 0);
}

TEST(DaemonTls, AWebYmlWithAnUnknownFieldIsRefusedAtStart) {
  Pki pki;
  const std::string web = pki.file("web.yml");
  std::ofstream(web) << "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                        "http_server_config:\n  http2: false\n";
  auto result =
      run_program({FLEETSCOPED, "--database", pki.file("h.db"), "--socket", pki.file("a.sock"),
                   "--agent-socket", pki.file("g.sock"), "--nvml-library", NVML_STANDIN,
                   "--prometheus-port", "0", "--prometheus-web-config", web});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find(web + ": http_server_config"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace fleetscope::test_support
