// Traffic secrets from NSS key log lines: "LABEL <client random, hex> <secret, hex>".
#include "tls/traffic_secrets.hpp"

#include "core/secret.hpp"

#include <openssl/crypto.h>

#include <cstring>
#include <string_view>

namespace burrow::tls {

namespace {

int secrets_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

traffic_secrets::~traffic_secrets() {
  OPENSSL_cleanse(client.data(), client.size());
  OPENSSL_cleanse(server.data(), server.size());
}

void keep_traffic_secrets(SSL* ssl, traffic_secrets* into) {
  SSL_set_ex_data(ssl, secrets_index(), into);
}

void take_traffic_secret(const SSL* ssl, const char* line) noexcept {
  auto* into = static_cast<traffic_secrets*>(SSL_get_ex_data(ssl, secrets_index()));
  if (!into || !line) return;
  const std::string_view text(line, ::strnlen(line, 512));
  const auto first = text.find(' ');
  const auto second = first == text.npos ? text.npos : text.find(' ', first + 1);
  if (second == text.npos) return;
  const std::string_view label = text.substr(0, first), hex = text.substr(second + 1);
  if (label == "CLIENT_TRAFFIC_SECRET_0")
    into->client_size = from_hex(hex, into->client);
  else if (label == "SERVER_TRAFFIC_SECRET_0")
    into->server_size = from_hex(hex, into->server);
}

}  // namespace burrow::tls
