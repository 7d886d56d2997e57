// The link's own records: keys from the exporter, one AEAD call per record.
#include "link/record_protection.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/tls1.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/wire_unit.hpp"
#include "tls/certs.hpp"

namespace burrow::link {

using boost::system::error_code;

namespace {

constexpr std::size_t iv_size = 12;
constexpr std::size_t header_size = proto::tls_record_header;
constexpr std::uint8_t application_data = proto::tls_application_data;
constexpr std::uint8_t change_cipher_spec_type = 20;
constexpr std::uint8_t alert_type = 21;
constexpr std::uint8_t handshake_type = 22;
constexpr std::uint8_t alert_warning = 1, alert_fatal = 2;
// Up to this size a record's data is copied next to its inner type and sealed in one call: a
// copy of a few KiB costs less than a second call into the AEAD.
constexpr std::size_t copied_plaintext = 4096;

class record_category_impl : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "own records"; }
  std::string message(int ev) const override {
    switch (static_cast<record_error>(ev)) {
      case record_error::bad_record:
        return "a record whose header is not TLS 1.3 application data or whose length is out "
               "of range";
      case record_error::authentication_failed:
        return "a record failed authentication (changed, cut, replayed or not the peer's)";
      case record_error::bad_content_type:
        return "a record of a content type other than application data or an alert";
      case record_error::crypto_failed:
        return "the record keys could not be made or used";
      case record_error::close_notify:
        return "the peer closed its side of the session (close_notify)";
      case record_error::peer_alert:
        return "the peer ended the session with an alert";
      case record_error::unexpected_message:
        return "a record TLS 1.3 does not allow after the handshake (a ChangeCipherSpec, a "
               "handshake message or an alert in the clear)";
      case record_error::record_overflow:
        return "a record over the 2^14 + 256 bytes TLS 1.3 allows, or whose data and padding "
               "are over 2^14 bytes";
    }
    return "own record error";
  }
};

// Fetched from the provider once: a cipher from EVP_aes_128_gcm() and the like is fetched
// again on every EVP_CipherInit_ex with a key, which each end-to-end stream makes twice.
const EVP_CIPHER* evp_cipher(record_cipher c) {
  static EVP_CIPHER* const aes_128_gcm = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
  static EVP_CIPHER* const aes_256_gcm = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
  static EVP_CIPHER* const chacha20_poly1305 =
      EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr);
  switch (c) {
    case record_cipher::aes_128_gcm:
      return aes_128_gcm;
    case record_cipher::aes_256_gcm:
      return aes_256_gcm;
    case record_cipher::chacha20_poly1305:
      return chacha20_poly1305;
  }
  return nullptr;
}

void write_header(std::uint8_t* p, std::size_t body) {
  p[0] = application_data;
  p[1] = 3;
  p[2] = 3;
  p[3] = static_cast<std::uint8_t>(body >> 8);
  p[4] = static_cast<std::uint8_t>(body);
}

}  // namespace

const boost::system::error_category& record_category() {
  static const record_category_impl category;
  return category;
}

error_code make_error_code(record_error e) {
  return {static_cast<int>(e), record_category()};
}

record_alert alert_for(error_code opening_failure) {
  if (opening_failure == record_error::unexpected_message ||
      opening_failure == record_error::bad_content_type)
    return record_alert::unexpected_message;
  if (opening_failure == record_error::record_overflow) return record_alert::record_overflow;
  return record_alert::bad_record_mac;
}

// One direction's AEAD state: its key's context, IV and the next record's sequence number.
struct record_protection::direction {
  // After per_key records the next key follows by itself: both ends count alike.
  direction(record_cipher c, key_source keys, bool sealing, std::uint64_t per_key)
      : cipher(evp_cipher(c)),
        gcm(c != record_cipher::chacha20_poly1305),
        owned(EVP_CIPHER_CTX_new()),
        ctx(owned.get()),
        keys(std::move(keys)),
        sealing(sealing),
        per_key(per_key) {
    if (!cipher || !ctx || per_key == 0 || !rekey())
      throw std::runtime_error("cannot make the record keys");
  }

  // Takes the key and IV of `generation` from the key source.
  bool rekey() {
    const auto key_size = static_cast<std::size_t>(EVP_CIPHER_get_key_length(cipher));
    std::array<std::uint8_t, 32 + iv_size> material{};
    if (key_size + iv_size > material.size()) return false;
    const bool ok =
        keys(generation, std::span(material.data(), key_size + iv_size)) &&
        EVP_CipherInit_ex(ctx, cipher, nullptr, material.data(), nullptr, sealing ? 1 : 0) == 1;
    std::copy_n(material.data() + key_size, iv_size, iv.begin());
    OPENSSL_cleanse(material.data(), material.size());
    return ok;
  }

  // The next generation's key, from the first record.
  bool next_key() {
    sequence = 0;
    ++generation;
    return rekey();
  }

  // Sets the nonce of the next record (IV XOR its sequence number, as TLS 1.3 does). For
  // AES-GCM through the "fixed IV" control with length -1, which takes the whole nonce as it is
  // (as OpenSSH sets its GCM nonces): EVP_CipherInit_ex would ask the provider for the IV's
  // length by name on every record, about as much work again as the control itself.
  bool start_record() {
    std::array<std::uint8_t, iv_size> nonce = iv;
    for (std::size_t i = 0; i < 8; ++i)
      nonce[iv_size - 1 - i] ^= static_cast<std::uint8_t>(sequence >> (8 * i));
    if (gcm) return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IV_FIXED, -1, nonce.data()) == 1;
    return EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, nonce.data(), -1) == 1;
  }

  // The record's tag, straight through the provider's parameters.
  bool get_tag(std::uint8_t* tag) {
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, tag_size),
        OSSL_PARAM_construct_end()};
    return EVP_CIPHER_CTX_get_params(ctx, params) == 1;
  }
  bool set_tag(const std::uint8_t* tag) {
    // OpenSSL only reads it; its parameter type has no const.
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                          const_cast<std::uint8_t*>(tag), tag_size),
        OSSL_PARAM_construct_end()};
    return EVP_CIPHER_CTX_set_params(ctx, params) == 1;
  }

  // After a record: the next sequence number, or the next key after per_key records.
  bool advance() {
    if (++sequence < per_key) return true;
    return next_key();
  }

  const EVP_CIPHER* cipher;
  bool gcm;  // AES-GCM, whose nonce the fixed-IV control sets
  // Owned from the start, so a constructor that throws frees it too.
  std::unique_ptr<EVP_CIPHER_CTX, tls::openssl_deleter<&EVP_CIPHER_CTX_free>> owned;
  EVP_CIPHER_CTX* ctx;
  key_source keys;
  bool sealing;
  std::uint64_t per_key;
  std::array<std::uint8_t, iv_size> iv{};
  std::uint64_t sequence = 0;
  std::uint32_t generation = 0;
};

namespace {

// A generation's key and IV from the link's exporter, with the sender's role as context.
auto exported_keys(record_protection::exporter keys, std::string sender) {
  return [keys = std::move(keys), sender = std::move(sender)](std::uint32_t generation,
                                                              std::span<std::uint8_t> out) {
    return keys(sender + " key " + std::to_string(generation), out);
  };
}

}  // namespace

record_protection::record_protection(record_cipher cipher, exporter keys, bool dialer,
                                     std::uint64_t records_per_key)
    : send_(std::make_unique<direction>(cipher, exported_keys(keys, dialer ? "dialer" : "acceptor"),
                                        true, records_per_key)),
      receive_(std::make_unique<direction>(
          cipher, exported_keys(keys, dialer ? "acceptor" : "dialer"), false, records_per_key)) {}

record_protection::~record_protection() = default;

bool record_protection::session_cipher(SSL* ssl, record_cipher& cipher) {
  const SSL_CIPHER* c = ssl ? SSL_get_current_cipher(ssl) : nullptr;
  if (!c || SSL_version(ssl) != TLS1_3_VERSION) return false;
  switch (SSL_CIPHER_get_id(c) & 0xffff) {
    case 0x1301:
      cipher = record_cipher::aes_128_gcm;
      return true;
    case 0x1302:
      cipher = record_cipher::aes_256_gcm;
      return true;
    case 0x1303:
      cipher = record_cipher::chacha20_poly1305;
      return true;
  }
  return false;
}

std::unique_ptr<record_protection> record_protection::from_session(SSL* ssl, bool dialer,
                                                                   std::string_view label) {
  record_cipher cipher;
  if (!session_cipher(ssl, cipher))
    throw std::runtime_error(
        "the link's own records need an established TLS 1.3 session with one of its AEADs");
  auto keys = [ssl, label = std::string(label)](std::string_view context,
                                                std::span<std::uint8_t> out) {
    return SSL_export_keying_material(ssl, out.data(), out.size(), label.data(), label.size(),
                                      reinterpret_cast<const unsigned char*>(context.data()),
                                      context.size(), 1) == 1;
  };
  return std::make_unique<record_protection>(cipher, keys, dialer);
}

error_code record_protection::seal(std::span<const std::uint8_t> plain, byte_buffer& out) {
  while (!plain.empty()) {
    const std::size_t n = std::min(plain.size(), max_plaintext);
    if (auto ec = seal_record(plain.first(n), application_data, out)) return ec;
    plain = plain.subspan(n);
  }
  return {};
}

error_code record_protection::seal_alert(record_alert alert, byte_buffer& out) {
  const std::uint8_t level = alert == record_alert::close_notify ? alert_warning : alert_fatal;
  const std::uint8_t body[2] = {level, static_cast<std::uint8_t>(alert)};
  return seal_record(body, alert_type, out);
}

error_code record_protection::seal_record(std::span<const std::uint8_t> plain, std::uint8_t type,
                                          byte_buffer& out) {
  auto& d = *send_;
  const std::size_t n = plain.size();
  const std::size_t body = n + 1 + tag_size;
  std::uint8_t* p = out.prepare(header_size + body);
  write_header(p, body);
  std::uint8_t* sealed = p + header_size;
  int len = 0;
  bool ok = d.start_record() && EVP_EncryptUpdate(d.ctx, nullptr, &len, p, header_size) == 1;
  if (ok && n <= copied_plaintext) {  // data and inner type in one call, sealed in place
    if (n) std::memcpy(sealed, plain.data(), n);
    sealed[n] = type;
    ok = EVP_EncryptUpdate(d.ctx, sealed, &len, sealed, static_cast<int>(n + 1)) == 1;
  } else if (ok) {
    ok = EVP_EncryptUpdate(d.ctx, sealed, &len, plain.data(), static_cast<int>(n)) == 1 &&
         EVP_EncryptUpdate(d.ctx, sealed + n, &len, &type, 1) == 1;
  }
  ok = ok && EVP_EncryptFinal_ex(d.ctx, sealed + n + 1, &len) == 1 && d.get_tag(sealed + n + 1) &&
       d.advance();
  if (!ok) return record_error::crypto_failed;
  out.commit(header_size + body);
  return {};
}

namespace {

// The body length of the record whose header is at `h`, or why it cannot be opened, decided
// from the header alone: a body longer than TLS 1.3 allows is record_overflow before any
// decryption (RFC 8446, section 5.2); a ChangeCipherSpec, handshake or alert in the clear after
// the handshake is an unexpected message (section 5); any other header that is not TLS 1.3
// application data is a bad record.
error_code check_header(const std::uint8_t* h, std::size_t& body) {
  body = (std::size_t{h[3]} << 8) | h[4];
  if (h[0] == change_cipher_spec_type || h[0] == alert_type || h[0] == handshake_type)
    return record_error::unexpected_message;
  if (h[0] != application_data || h[1] != 3 || h[2] != 3 || body < 1 + record_protection::tag_size)
    return record_error::bad_record;
  if (body > record_protection::max_record - header_size) return record_error::record_overflow;
  return {};
}

}  // namespace

std::size_t record_protection::whole_record(std::span<const std::uint8_t> in) {
  std::size_t body = 0;
  if (in.size() < header_size || check_header(in.data(), body)) return 0;
  return in.size() >= header_size + body ? header_size + body : 0;
}

error_code record_protection::open_record(const std::uint8_t* h, std::size_t body,
                                          std::uint8_t* out, std::size_t room, std::size_t& plain) {
  auto& d = *receive_;
  const std::size_t n = body - tag_size;  // the plaintext, its inner type and any padding
  int len = 0;
  std::uint8_t last = 0;
  bool ok = d.start_record() && d.set_tag(h + header_size + n) &&
            EVP_DecryptUpdate(d.ctx, nullptr, &len, h, header_size) == 1;
  if (ok && room >= n) {  // all of it in one call
    ok = EVP_DecryptUpdate(d.ctx, out, &len, h + header_size, static_cast<int>(n)) == 1;
    last = out[n - 1];
  } else if (ok) {   // the last byte apart, so that a full record's data fits max_plaintext
    ok = (n == 1 ||  // a record without data (ours never are) may have nowhere to put it
          EVP_DecryptUpdate(d.ctx, out, &len, h + header_size, static_cast<int>(n - 1)) == 1) &&
         EVP_DecryptUpdate(d.ctx, &last, &len, h + header_size + n - 1, 1) == 1;
  }
  if (!ok) return record_error::crypto_failed;
  std::uint8_t rest[16];  // an AEAD's final step writes nothing
  if (EVP_DecryptFinal_ex(d.ctx, rest, &len) != 1) return record_error::authentication_failed;
  if (!d.advance()) return record_error::crypto_failed;
  // Data, type and padding together are at most 2^14 + 1 bytes (RFC 8446, section 5.4).
  if (n > max_plaintext + 1) return record_error::record_overflow;
  // The inner type is the last byte that is not zero padding (RFC 8446, section 5.4); the last
  // byte of all is in `last`, the others in `out`.
  std::size_t size = n - 1;  // the data, if `last` is the type
  std::uint8_t type = last;
  if (type == 0) {
    while (size > 0 && out[size - 1] == 0) --size;
    if (size == 0) return record_error::bad_content_type;  // all padding
    type = out[--size];
  }
  plain = 0;
  if (type == application_data) {
    plain = size;
    return {};
  }
  // Keys move by count, not by KeyUpdate: any handshake message is unexpected here.
  if (type == handshake_type) return record_error::unexpected_message;
  if (type != alert_type || size != 2) return record_error::bad_content_type;
  // An authentic alert: a warning close_notify ends the peer's sending; anything else, all.
  return out[0] == alert_warning && out[1] == static_cast<std::uint8_t>(record_alert::close_notify)
             ? record_error::close_notify
             : record_error::peer_alert;
}

error_code record_protection::open(std::span<const std::uint8_t> in, byte_buffer& plain,
                                   std::size_t& used) {
  used = 0;
  while (in.size() - used >= header_size) {
    const std::uint8_t* h = in.data() + used;
    std::size_t body = 0;
    if (auto ec = check_header(h, body)) return ec;
    if (in.size() - used < header_size + body) break;
    std::size_t n = 0;
    const std::size_t room = body - tag_size;  // the data and its inner type
    const error_code ec = open_record(h, body, plain.prepare(room), room, n);
    if (ec && ec != record_error::close_notify && ec != record_error::peer_alert) return ec;
    plain.commit(n);
    used += header_size + body;
    if (ec) return ec;
  }
  return {};
}

error_code record_protection::open(std::span<const std::uint8_t> in, std::span<std::uint8_t> out,
                                   std::size_t& used, std::size_t& produced) {
  used = produced = 0;
  while (in.size() - used >= header_size) {
    const std::uint8_t* h = in.data() + used;
    std::size_t body = 0;
    if (auto ec = check_header(h, body)) return ec;
    if (in.size() - used < header_size + body || out.size() - produced < body - tag_size - 1) break;
    std::size_t n = 0;
    const error_code ec = open_record(h, body, out.data() + produced, out.size() - produced, n);
    if (ec && ec != record_error::close_notify && ec != record_error::peer_alert) return ec;
    produced += n;
    used += header_size + body;
    if (ec) return ec;
  }
  return {};
}

std::uint64_t record_protection::sent_in_key() const {
  return send_->sequence;
}
std::uint64_t record_protection::received_in_key() const {
  return receive_->sequence;
}
std::uint32_t record_protection::send_generation() const {
  return send_->generation;
}
std::uint32_t record_protection::receive_generation() const {
  return receive_->generation;
}

}  // namespace burrow::link
