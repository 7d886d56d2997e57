// Traffic secrets from NSS key log lines: "LABEL <client random, hex> <secret, hex>".
#include "tls/traffic_secrets.hpp"

#include <openssl/crypto.h>

#include <cstring>
#include <string_view>

namespace burrow::tls {

namespace {

int secrets_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes `hex` into `out`; the size, or 0 when it is not whole bytes of hex that fit.
std::size_t decode(std::string_view hex, std::span<std::uint8_t> out) {
  if (hex.empty() || hex.size() % 2 || hex.size() / 2 > out.size()) return 0;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return 0;
    out[i / 2] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return hex.size() / 2;
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
    into->client_size = decode(hex, into->client);
  else if (label == "SERVER_TRAFFIC_SECRET_0")
    into->server_size = decode(hex, into->server);
}

}  // namespace burrow::tls
