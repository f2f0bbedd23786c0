#include "fleetscope/daemon/tls_listener.h"

#include "fleetscope/common/text.h"

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <mutex>
#include <sstream>
#include <stdexcept>

#include <thrift/TConfiguration.h>
#include <thrift/transport/TSSLSocket.h>

namespace fleetscope::daemon {

using apache::thrift::TConfiguration;
using apache::thrift::transport::SSLContext;
using apache::thrift::transport::TSSLException;
using apache::thrift::transport::TSSLSocket;
using apache::thrift::transport::TSSLSocketFactory;
using apache::thrift::transport::TTransport;

namespace {

using text::trim;

std::string common_name_of(X509* certificate) {
  X509_NAME* subject = X509_get_subject_name(certificate);
  int index = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (index < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return {};
  std::string name(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
  OPENSSL_free(utf8);
  return name;
}

// A server-side TLS connection that, once Thrift verified the client certificate against the CA
// (TSSLSocket::authorize, run at the end of the handshake), maps its CN to a uid, or ends the
// handshake when the CN maps to none.
class IdentifiedTlsSocket : public TSSLSocket {
 public:
  IdentifiedTlsSocket(std::shared_ptr<SSLContext> context, THRIFT_SOCKET fd,
                      std::shared_ptr<THRIFT_SOCKET> interrupt,
                      std::shared_ptr<TConfiguration> limits,
                      std::shared_ptr<const TlsIdentityMap> identities)
      : TSSLSocket(std::move(context), fd, std::move(interrupt), std::move(limits)),
        identities_(std::move(identities)) {
    server(true);
  }

  std::optional<uid_t> uid() const {
    std::lock_guard lock(mutex_);
    return uid_;
  }

 protected:
  void authorize() override {
    // Chain verification result and certificate presence (SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
    TSSLSocket::authorize();
    X509* certificate = SSL_get1_peer_certificate(ssl_);
    if (!certificate) throw TSSLException("fleetscoped: a client certificate is required");
    std::string name = common_name_of(certificate);
    X509_free(certificate);
    auto uid = identities_->uid_of(name);
    if (!uid)
      throw TSSLException("fleetscoped: client certificate CN '" + name +
                          "' maps to no user (tls_client_uids, tls_default_uid)");
    std::lock_guard lock(mutex_);
    uid_ = *uid;
  }

 private:
  std::shared_ptr<const TlsIdentityMap> identities_;
  mutable std::mutex mutex_;
  std::optional<uid_t> uid_;
};

class IdentifyingTlsFactory : public TSSLSocketFactory {
 public:
  IdentifyingTlsFactory(std::shared_ptr<TConfiguration> limits,
                        std::shared_ptr<const TlsIdentityMap> identities)
      : TSSLSocketFactory(apache::thrift::transport::SSLTLS),
        limits_(std::move(limits)),
        identities_(std::move(identities)) {
    // TLS 1.2 at least (SSLTLS alone only rules out SSLv2/v3).
    SSL_CTX_set_min_proto_version(ctx_->get(), TLS1_2_VERSION);
  }
  std::shared_ptr<TSSLSocket> createSocket(THRIFT_SOCKET fd) override {
    return std::make_shared<IdentifiedTlsSocket>(ctx_, fd, nullptr, limits_, identities_);
  }
  std::shared_ptr<TSSLSocket> createSocket(THRIFT_SOCKET fd,
                                           std::shared_ptr<THRIFT_SOCKET> interrupt) override {
    return std::make_shared<IdentifiedTlsSocket>(ctx_, fd, std::move(interrupt), limits_,
                                                 identities_);
  }

 private:
  std::shared_ptr<TConfiguration> limits_;
  std::shared_ptr<const TlsIdentityMap> identities_;
};

}  // namespace

std::optional<uid_t> TlsIdentityMap::uid_of(const std::string& common_name) const {
  if (auto it = uid_by_name.find(common_name); it != uid_by_name.end()) return it->second;
  return default_uid;
}

TlsIdentityMap parse_tls_identities(const std::string& client_uids, int64_t default_uid) {
  TlsIdentityMap map;
  if (default_uid >= 0) map.default_uid = static_cast<uid_t>(default_uid);
  std::istringstream items(client_uids);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    auto colon = item.rfind(':');
    std::string name = colon == std::string::npos ? "" : trim(item.substr(0, colon));
    std::string uid = colon == std::string::npos ? "" : trim(item.substr(colon + 1));
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(uid, &used);
    } catch (...) {
      used = 0;
    }
    if (name.empty() || used == 0 || used != uid.size() || value < 0 || value > 0xfffffffeLL)
      throw std::invalid_argument("expected 'CN:uid' items separated by commas, got '" + item +
                                  "'");
    map.uid_by_name[name] = static_cast<uid_t>(value);
  }
  return map;
}

bool is_loopback_address(const std::string& ipv4_address) {
  in_addr address{};
  return inet_pton(AF_INET, ipv4_address.c_str(), &address) == 1 &&
         (ntohl(address.s_addr) >> 24) == 127;
}

bool tls_configured(const DaemonConfig& c) {
  return !c.tls_cert.empty() || !c.tls_key.empty() || !c.tls_ca.empty();
}

void check_listener_config(const DaemonConfig& c) {
  in_addr address{};
  if (inet_pton(AF_INET, c.tcp_address.c_str(), &address) != 1)
    throw std::runtime_error("tcp_address: '" + c.tcp_address + "' is not an IPv4 address");
  if (tls_configured(c)) {
    for (auto [key, path] : {std::pair{"tls_cert", &c.tls_cert}, std::pair{"tls_key", &c.tls_key},
                             std::pair{"tls_ca", &c.tls_ca}}) {
      if (path->empty())
        throw std::runtime_error(std::string(key) +
                                 " is missing: TLS needs tls_cert, tls_key and tls_ca together");
      if (::access(path->c_str(), R_OK) != 0)
        throw std::runtime_error(std::string(key) + ": cannot read '" + *path + "'");
    }
    try {
      parse_tls_identities(c.tls_client_uids, c.tls_default_uid);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("tls_client_uids: ") + e.what());
    }
    if (c.tcp_port == 0)
      throw std::runtime_error("TLS is configured but tcp_port is 0 (the TCP listener is off)");
  } else if (c.tcp_port > 0 && !is_loopback_address(c.tcp_address)) {
    throw std::runtime_error("tcp_address " + c.tcp_address +
                             " is not a loopback address: a TCP listener outside 127.0.0.0/8 "
                             "needs TLS with client certificates (tls_cert, tls_key, tls_ca)");
  }
}

std::shared_ptr<TSSLSocketFactory> make_tls_socket_factory(const DaemonConfig& c,
                                                           std::shared_ptr<TConfiguration> limits) {
  auto identities = std::make_shared<const TlsIdentityMap>(
      parse_tls_identities(c.tls_client_uids, c.tls_default_uid));
  auto factory = std::make_shared<IdentifyingTlsFactory>(std::move(limits), identities);
  factory->loadCertificate(c.tls_cert.c_str());
  factory->loadPrivateKey(c.tls_key.c_str());
  factory->loadTrustedCertificates(c.tls_ca.c_str());
  factory->authenticate(true);  // client certificates required and verified against tls_ca
  return factory;
}

std::optional<uid_t> tls_peer_uid(const std::shared_ptr<TTransport>& transport) {
  auto socket = std::dynamic_pointer_cast<IdentifiedTlsSocket>(transport);
  if (!socket) return std::nullopt;
  return socket->uid();
}

}  // namespace fleetscope::daemon
