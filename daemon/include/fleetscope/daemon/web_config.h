// The web configuration file Prometheus exporters share (exporter-toolkit's `web.yml`,
// https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md), for
// the daemon's Prometheus endpoint: TLS (`tls_server_config`) and HTTP basic authentication
// (`basic_auth_users`, bcrypt hashes), so that an operator can lock the page that exposes every
// workflow. The subset read here:
//
//   tls_server_config:
//     cert_file: server.crt          # PEM; a relative path is relative to this file's folder
//     key_file: server.key
//     client_ca_file: ca.crt         # optional
//     client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default),
//                                                    # VerifyClientCertIfGiven
//     min_version: TLS12             # or TLS13
//   basic_auth_users:
//     alice: $2y$10$...              # bcrypt (htpasswd -nBC 10 alice), checked with libcrypt
//
// Any other key is refused (as exporter-toolkit refuses unknown fields), naming the file.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace fleetscope::daemon {

struct WebConfig {
  struct Tls {
    std::string cert_file, key_file, client_ca_file;
    std::string client_auth_type = "NoClientCert";
    std::string min_version = "TLS12";
  };
  std::optional<Tls> tls;
  std::map<std::string, std::string> basic_auth_users;  // name -> bcrypt hash
};

// Throws std::runtime_error naming the file (and the key) when it cannot be read or is not of
// the form above.
WebConfig load_web_config(const std::string& path);

// Whether an HTTP request's headers carry `Authorization: Basic ...` of a listed user with the
// right password (bcrypt through crypt_rn; the comparison takes the same time however much of
// the hash matches). True when no users are configured.
bool basic_auth_allows(const WebConfig& config, const std::string& request_headers);

}  // namespace fleetscope::daemon
