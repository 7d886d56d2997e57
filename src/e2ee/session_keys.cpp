// Session keys: the exporter gives the session's id and secret; HKDF-Expand (RFC 5869) with
// SHA-256 gives each stream's secret from the session's, and each record key from the stream's.
#include "e2ee/session_keys.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/secret.hpp"
#include "e2ee/hkdf.hpp"

namespace burrow::e2ee {

namespace {

constexpr std::string_view id_label = "EXPORTER-burrow-e2ee-session-id";
constexpr std::string_view secret_label = "EXPORTER-burrow-e2ee-session-secret";

std::string info(std::string_view prefix, std::string_view context) {
  std::string out;
  out.reserve(prefix.size() + context.size());
  out.append(prefix);
  out.append(context);
  return out;
}

// One stream's secret, wiped when its last record key generation has been made from it (with the
// stream's record protection, which asks for each generation's keys as it needs them).
struct stream_secret {
  std::array<std::uint8_t, 32> bytes{};
  ~stream_secret() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

}  // namespace

std::shared_ptr<const session_keys> session_keys::from_session(SSL* ssl) {
  link::record_cipher cipher;
  if (!link::record_protection::session_cipher(ssl, cipher))
    throw std::runtime_error("an end-to-end session needs TLS 1.3 with one of its AEADs");
  std::array<std::uint8_t, session_id_size> id{};
  std::array<std::uint8_t, 32> secret{};
  const bool exported =
      SSL_export_keying_material(ssl, id.data(), id.size(), id_label.data(), id_label.size(),
                                 nullptr, 0, 0) == 1 &&
      SSL_export_keying_material(ssl, secret.data(), secret.size(), secret_label.data(),
                                 secret_label.size(), nullptr, 0, 0) == 1;
  auto keys = exported ? from_secret(id, cipher, secret) : nullptr;
  OPENSSL_cleanse(secret.data(), secret.size());
  if (!keys) throw std::runtime_error("cannot export the end-to-end session's keys");
  return keys;
}

std::shared_ptr<const session_keys> session_keys::from_secret(
    std::span<const std::uint8_t> id, link::record_cipher cipher,
    std::span<const std::uint8_t> secret) {
  std::shared_ptr<session_keys> keys(new session_keys);
  if (id.size() != session_id_size || secret.size() != keys->secret_.size())
    throw std::invalid_argument("an end-to-end session's id or secret has the wrong size");
  keys->id_ = hex(id);
  keys->cipher_ = cipher;
  std::copy(secret.begin(), secret.end(), keys->secret_.begin());
  return keys;
}

session_keys::~session_keys() {
  OPENSSL_cleanse(secret_.data(), secret_.size());
}

std::unique_ptr<link::record_protection> session_keys::stream(std::uint64_t number,
                                                              bool dialer) const {
  if (number == 0) throw std::runtime_error("end-to-end stream numbers start at 1");
  std::string context(8, '\0');
  for (int i = 0; i < 8; ++i) context[i] = static_cast<char>(number >> (56 - 8 * i));
  auto secret = std::make_shared<stream_secret>();
  if (!hkdf_sha256_expand(secret_, info("burrow-e2ee stream ", context), secret->bytes))
    throw std::runtime_error("cannot derive an end-to-end stream's secret");
  auto keys = [secret](std::string_view what, std::span<std::uint8_t> out) {
    return hkdf_sha256_expand(secret->bytes, info("burrow-e2ee record ", what), out);
  };
  return std::make_unique<link::record_protection>(cipher_, std::move(keys), dialer);
}

bool valid_session_id(std::string_view text) {
  return text.size() == 2 * session_id_size && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace burrow::e2ee
