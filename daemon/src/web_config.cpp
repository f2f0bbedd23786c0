#include "fleetscope/daemon/web_config.h"

#include <crypt.h>
#include <yaml.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>

namespace fleetscope::daemon {
namespace {

struct Document {
  yaml_document_t doc{};
  bool loaded = false;
  ~Document() {
    if (loaded) yaml_document_delete(&doc);
  }
};

std::string scalar(yaml_node_t* node, const std::string& where) {
  if (!node || node->type != YAML_SCALAR_NODE)
    throw std::runtime_error(where + ": expected a string");
  return std::string(reinterpret_cast<const char*>(node->data.scalar.value),
                     node->data.scalar.length);
}

// Calls `each(key, value node)` for every pair of a mapping node.
template <class Each>
void for_each_pair(yaml_document_t* doc, yaml_node_t* node, const std::string& where, Each each) {
  if (!node || node->type != YAML_MAPPING_NODE)
    throw std::runtime_error(where + ": expected a mapping");
  for (yaml_node_pair_t* pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top;
       ++pair) {
    const std::string key = scalar(yaml_document_get_node(doc, pair->key), where);
    each(key, yaml_document_get_node(doc, pair->value));
  }
}

std::string decode_base64(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    const size_t value = alphabet.find(c);
    if (value == std::string::npos) return {};
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

bool same_bytes(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

}  // namespace

WebConfig load_web_config(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error(path + ": cannot read the web configuration file");
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, file.get());
  Document document;
  document.loaded = yaml_parser_load(&parser, &document.doc) != 0;
  if (!document.loaded) {
    const std::string problem = parser.problem ? parser.problem : "not YAML";
    const auto line = parser.problem_mark.line + 1;
    yaml_parser_delete(&parser);
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + problem);
  }
  yaml_parser_delete(&parser);
  WebConfig config;
  yaml_node_t* root = yaml_document_get_root_node(&document.doc);
  if (!root) return config;  // an empty file: no TLS, no users
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  auto file_path = [&](const std::string& name) {
    if (name.empty() || name.front() == '/') return name;
    return (folder / name).string();
  };
  yaml_document_t* doc = &document.doc;
  for_each_pair(doc, root, path, [&](const std::string& key, yaml_node_t* value) {
    if (key == "tls_server_config") {
      WebConfig::Tls tls;
      for_each_pair(doc, value, path + ": tls_server_config",
                    [&](const std::string& field, yaml_node_t* v) {
                      const std::string where = path + ": tls_server_config." + field;
                      const std::string text = scalar(v, where);
                      if (field == "cert_file")
                        tls.cert_file = file_path(text);
                      else if (field == "key_file")
                        tls.key_file = file_path(text);
                      else if (field == "client_ca_file")
                        tls.client_ca_file = file_path(text);
                      else if (field == "client_auth_type")
                        tls.client_auth_type = text;
                      else if (field == "min_version")
                        tls.min_version = text;
                      else
                        throw std::runtime_error(where + ": unknown or unsupported field");
                    });
      if (tls.cert_file.empty() || tls.key_file.empty())
        throw std::runtime_error(path + ": tls_server_config needs cert_file and key_file");
      if (tls.client_auth_type != "NoClientCert" &&
          tls.client_auth_type != "RequireAndVerifyClientCert" &&
          tls.client_auth_type != "VerifyClientCertIfGiven")
        throw std::runtime_error(path + ": tls_server_config.client_auth_type '" +
                                 tls.client_auth_type +
                                 "' (expected NoClientCert, VerifyClientCertIfGiven or "
                                 "RequireAndVerifyClientCert)");
      if (tls.client_auth_type != "NoClientCert" && tls.client_ca_file.empty())
        throw std::runtime_error(path + ": client_auth_type " + tls.client_auth_type +
                                 " needs client_ca_file");
      if (tls.min_version != "TLS12" && tls.min_version != "TLS13")
        throw std::runtime_error(path + ": tls_server_config.min_version '" + tls.min_version +
                                 "' (expected TLS12 or TLS13)");
      config.tls = tls;
    } else if (key == "basic_auth_users") {
      for_each_pair(doc, value, path + ": basic_auth_users",
                    [&](const std::string& user, yaml_node_t* v) {
                      const std::string hash = scalar(v, path + ": basic_auth_users." + user);
                      if (hash.rfind("$2", 0) != 0)
                        throw std::runtime_error(path + ": basic_auth_users." + user +
                                                 ": expected a bcrypt hash ($2a$, $2b$, $2y$)");
                      config.basic_auth_users[user] = hash;
                    });
    } else {
      throw std::runtime_error(path + ": " + key + ": unknown or unsupported field");
    }
  });
  return config;
}

bool basic_auth_allows(const WebConfig& config, const std::string& request_headers) {
  if (config.basic_auth_users.empty()) return true;
  // The Authorization header, case-insensitively named (RFC 9110).
  std::string lowered = request_headers;
  for (char& c : lowered)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  const size_t at = lowered.find("\r\nauthorization:");
  if (at == std::string::npos) return false;
  const size_t begin = at + std::strlen("\r\nauthorization:");
  const size_t end = request_headers.find("\r\n", begin);
  std::string value = request_headers.substr(begin, end - begin);
  while (!value.empty() && value.front() == ' ') value.erase(0, 1);
  if (value.size() < 6) return false;
  std::string scheme = value.substr(0, 6);
  for (char& c : scheme)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (scheme != "basic ") return false;
  const std::string credentials = decode_base64(value.substr(6));
  const size_t colon = credentials.find(':');
  if (colon == std::string::npos) return false;
  auto user = config.basic_auth_users.find(credentials.substr(0, colon));
  if (user == config.basic_auth_users.end()) return false;
  const std::string password = credentials.substr(colon + 1);
  crypt_data data{};
  const char* hashed = crypt_rn(password.c_str(), user->second.c_str(), &data, sizeof data);
  return hashed && hashed[0] != '*' && same_bytes(hashed, user->second);
}

}  // namespace fleetscope::daemon
