// Opening captured link records with keys derived from an NSS key log, independently of the code
// that seals them: the exporter is computed here from RFC 8446, not asked of OpenSSL.
#include "harness/link_records.hpp"

#include <openssl/core_names.h>
#include <openssl/kdf.h>

#include <map>
#include <sstream>
#include <stdexcept>

#include "link/record_protection.hpp"
#include "proto/frame.hpp"
#include "proto/wire_unit.hpp"

namespace burrow::test {
namespace {

using bytes = std::vector<std::uint8_t>;

std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

bytes from_hex(std::string_view hex) {
  bytes out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::uint8_t>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  return out;
}

bytes digest(const EVP_MD* md, std::span<const std::uint8_t> in) {
  bytes out(static_cast<std::size_t>(EVP_MD_get_size(md)));
  unsigned int n = 0;
  if (EVP_Digest(in.data(), in.size(), out.data(), &n, md, nullptr) != 1)
    throw std::runtime_error("digest failed");
  return out;
}

// HKDF-Expand-Label (RFC 8446, section 7.1).
bytes expand_label(const EVP_MD* md, std::span<const std::uint8_t> secret, std::string_view label,
                   std::span<const std::uint8_t> context, std::size_t length) {
  const std::string full = "tls13 " + std::string(label);
  std::string info;  // HkdfLabel: length, label and context, each with its own length
  info += static_cast<char>(length >> 8);
  info += static_cast<char>(length);
  info += static_cast<char>(full.size());
  info += full;
  info += static_cast<char>(context.size());
  info.append(reinterpret_cast<const char*>(context.data()), context.size());
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                       const_cast<char*>(EVP_MD_get0_name(md)), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                        const_cast<std::uint8_t*>(secret.data()), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode), OSSL_PARAM_construct_end()};
  bytes out(length);
  const bool ok = ctx && EVP_KDF_derive(ctx, out.data(), out.size(), params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  if (!ok) throw std::runtime_error("HKDF-Expand-Label failed");
  return out;
}

struct suite {
  link::record_cipher cipher;
  const EVP_MD* md;
};

// The cipher suite a ServerHello chose; false for anything else.
bool server_suite(std::string_view d, suite& out) {
  if (d.size() < 47 || d[0] != 0x16 || d[5] != 0x02) return false;
  const std::size_t at = 44 + static_cast<std::uint8_t>(d[43]);
  if (d.size() < at + 2) return false;
  switch ((static_cast<std::uint8_t>(d[at]) << 8) | static_cast<std::uint8_t>(d[at + 1])) {
    case 0x1301:
      out = {link::record_cipher::aes_128_gcm, EVP_sha256()};
      return true;
    case 0x1302:
      out = {link::record_cipher::aes_256_gcm, EVP_sha384()};
      return true;
    case 0x1303:
      out = {link::record_cipher::chacha20_poly1305, EVP_sha256()};
      return true;
  }
  return false;
}

// The records of one direction that open with `records`, in order, from the first that does.
std::string open_direction(std::string_view d, link::record_protection& records) {
  auto in = as_bytes(d);
  while (in.size() >= 5 && (in[0] == 0x16 || in[0] == 0x14))  // the handshake in the clear
    in = in.subspan(std::min(in.size(), 5 + ((std::size_t{in[3]} << 8) | in[4])));
  std::string plain;
  bool started = false;
  while (!in.empty()) {
    auto u = proto::next_wire_unit(in, proto::default_max_frame_payload);
    if (u.kind == proto::wire_unit_kind::error || u.kind == proto::wire_unit_kind::incomplete)
      break;
    if (u.kind == proto::wire_unit_kind::tls_records) {
      for (auto run = in.first(u.size); !run.empty();) {
        const std::size_t size = 5 + ((std::size_t{run[3]} << 8) | run[4]);
        link::byte_buffer out;
        std::size_t used = 0;
        const bool opened = !records.open(run.first(size), out, used) && used == size;
        if (started && !opened) return plain;  // the sequence broke: nothing after it is read
        if (opened) {
          started = true;
          plain.append(reinterpret_cast<const char*>(out.data()), out.size());
        }
        run = run.subspan(size);
      }
    }
    in = in.subspan(u.size);
  }
  return plain;
}

}  // namespace

std::vector<std::uint8_t> tls13_export(const EVP_MD* md, std::span<const std::uint8_t> secret,
                                       std::string_view label,
                                       std::span<const std::uint8_t> context, std::size_t length) {
  const auto derived = expand_label(md, secret, label, digest(md, {}),
                                    static_cast<std::size_t>(EVP_MD_get_size(md)));
  return expand_label(md, derived, "exporter", digest(md, context), length);
}

std::string open_own_records(const std::vector<tcp_direction>& directions,
                             std::string_view keylog_text) {
  std::map<std::string, bytes> exporter_secrets;  // by client random, in hex
  std::istringstream lines{std::string(keylog_text)};
  for (std::string label, random, secret; lines >> label >> random >> secret;)
    if (label == "EXPORTER_SECRET") exporter_secrets[random] = from_hex(secret);

  std::map<std::string, std::vector<const tcp_direction*>> streams;
  for (const auto& d : directions) streams[d.stream].push_back(&d);
  std::string plain;
  for (const auto& [id, both] : streams) {
    if (both.size() != 2) continue;
    const tcp_direction* client = nullptr;
    const tcp_direction* server = nullptr;
    for (const auto* d : both) {
      if (d->bytes.size() > 43 && d->bytes[0] == 0x16 && d->bytes[5] == 0x01) client = d;
      if (d->bytes.size() > 43 && d->bytes[0] == 0x16 && d->bytes[5] == 0x02) server = d;
    }
    suite s{};
    if (!client || !server || !server_suite(server->bytes, s)) continue;
    static constexpr char hex[] = "0123456789abcdef";
    std::string random;
    for (std::size_t i = 11; i < 43; ++i) {
      const auto c = static_cast<std::uint8_t>(client->bytes[i]);
      random += hex[c >> 4];
      random += hex[c & 15];
    }
    const auto found = exporter_secrets.find(random);
    if (found == exporter_secrets.end()) continue;
    const bytes secret = found->second;
    auto keys = [md = s.md, secret](std::string_view context, std::span<std::uint8_t> out) {
      const auto material =
          tls13_export(md, secret, "EXPORTER-burrow-link-records", as_bytes(context), out.size());
      std::copy(material.begin(), material.end(), out.begin());
      return true;
    };
    // What the dialer sent opens with the acceptor's view of the keys, and the other way round.
    link::record_protection at_acceptor(s.cipher, keys, false), at_dialer(s.cipher, keys, true);
    plain += open_direction(client->bytes, at_acceptor);
    plain += open_direction(server->bytes, at_dialer);
  }
  return plain;
}

std::vector<std::uint8_t> tls13_expand_label(const EVP_MD* md, std::span<const std::uint8_t> secret,
                                             std::string_view label,
                                             std::span<const std::uint8_t> context,
                                             std::size_t length) {
  return expand_label(md, secret, label, context, length);
}

std::vector<std::uint8_t> tls13_record(const EVP_CIPHER* cipher, std::span<const std::uint8_t> key,
                                       std::span<const std::uint8_t> iv, std::uint64_t sequence,
                                       std::span<const std::uint8_t> plain, std::uint8_t type,
                                       std::size_t padding) {
  std::vector<std::uint8_t> nonce(iv.begin(), iv.end());
  for (std::size_t i = 0; i < 8; ++i)
    nonce[nonce.size() - 1 - i] ^= static_cast<std::uint8_t>(sequence >> (8 * i));
  std::vector<std::uint8_t> inner(plain.begin(), plain.end());
  inner.push_back(type);
  inner.resize(inner.size() + padding, 0);
  const std::size_t body = inner.size() + 16;
  std::vector<std::uint8_t> record(5 + body);
  record[0] = 23;  // application data, TLS 1.2 on the wire, the body's length
  record[1] = record[2] = 3;
  record[3] = static_cast<std::uint8_t>(body >> 8);
  record[4] = static_cast<std::uint8_t>(body);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  const bool ok =
      EVP_EncryptInit_ex(ctx, cipher, nullptr, key.data(), nonce.data()) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &len, record.data(), 5) == 1 &&
      EVP_EncryptUpdate(ctx, record.data() + 5, &len, inner.data(),
                        static_cast<int>(inner.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx, record.data() + 5 + inner.size(), &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, record.data() + 5 + inner.size()) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) throw std::runtime_error("the reference AEAD failed");
  return record;
}

}  // namespace burrow::test
