// The application traffic secrets of a TLS 1.3 session OpenSSL's handshake made, taken from its
// key log callback (the one way OpenSSL 3.0 gives them out), so that a visitor's session can go
// on with our own records (link/record_protection.hpp). Only sessions that asked for them, on
// contexts that watch (make_web_server_context), keep them; nothing is written anywhere.
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace burrow::tls {

struct traffic_secrets {
  static constexpr std::size_t max_size = 48;  // SHA-384's
  std::array<std::uint8_t, max_size> client{}, server{};
  std::size_t client_size = 0, server_size = 0;

  traffic_secrets() = default;
  ~traffic_secrets();  // wipes them
  traffic_secrets(const traffic_secrets&) = delete;
  traffic_secrets& operator=(const traffic_secrets&) = delete;

  bool complete() const { return client_size && client_size == server_size; }
  std::span<const std::uint8_t> client_secret() const { return {client.data(), client_size}; }
  std::span<const std::uint8_t> server_secret() const { return {server.data(), server_size}; }
};

// Has `ssl` keep its application traffic secrets in `into` (which must outlive its handshake),
// if its context watches; nullptr stops that.
void keep_traffic_secrets(SSL* ssl, traffic_secrets* into);

// For a key log callback: takes CLIENT_TRAFFIC_SECRET_0 and SERVER_TRAFFIC_SECRET_0 lines
// (NSS key log format) into the session's traffic_secrets, if it keeps them; ignores the rest.
void take_traffic_secret(const SSL* ssl, const char* line) noexcept;

}  // namespace burrow::tls
