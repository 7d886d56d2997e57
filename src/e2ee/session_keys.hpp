// End-to-end session keys (docs/protocol.md, section 6c): one TLS 1.3 handshake between
// `burrow connect` and the agent makes a session secret, and each visitor connection's stream is
// keyed from it by its number, so a new connection costs a key derivation, not a handshake.
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "link/record_protection.hpp"

namespace burrow::e2ee {

// The ALPN of a session stream: connect offers only this on it, the agent accepts it only there.
inline constexpr std::string_view alpn_session = "burrow-e2ee-session/1";
// What a stream's open metadata says in `e2ee_session` to ask for a new session.
inline constexpr std::string_view new_session = "new";
inline constexpr std::size_t session_id_size = 16;  // bytes; 32 hex digits in the metadata

class session_keys {
 public:
  // From an established session stream's TLS 1.3 session, at either end. Throws
  // std::runtime_error for a session without one of TLS 1.3's AEADs or without an exporter.
  static std::shared_ptr<const session_keys> from_session(SSL* ssl);
  // From what the exporter gave: session_id_size bytes of id and 32 of secret. Throws
  // std::invalid_argument for other sizes.
  static std::shared_ptr<const session_keys> from_secret(std::span<const std::uint8_t> id,
                                                         link::record_cipher cipher,
                                                         std::span<const std::uint8_t> secret);
  ~session_keys();
  session_keys(const session_keys&) = delete;
  session_keys& operator=(const session_keys&) = delete;

  // The session's name in open metadata: 32 lowercase hex digits, from the exporter, so that
  // only the session's two ends can know it before they use it.
  const std::string& id() const { return id_; }
  link::record_cipher cipher() const { return cipher_; }

  // The record protection of stream `number` (at least 1): `dialer` is connect's end. Throws
  // std::runtime_error when a key cannot be made.
  std::unique_ptr<link::record_protection> stream(std::uint64_t number, bool dialer) const;

 private:
  session_keys() = default;
  std::string id_;
  link::record_cipher cipher_ = link::record_cipher::aes_128_gcm;
  std::array<std::uint8_t, 32> secret_{};
};

// A session id as it may appear in metadata: exactly 32 lowercase hex digits.
bool valid_session_id(std::string_view text);

}  // namespace burrow::e2ee
