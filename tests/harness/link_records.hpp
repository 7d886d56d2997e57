// The link's own records as someone holding one side's TLS secrets reads them. After the welcome a
// link's records are sealed with keys from its TLS session's exporter (src/link/record_protection
// .hpp), which an NSS key log's EXPORTER_SECRET line gives; tshark knows nothing of them. The
// capture tests use this to show what the relay, with its own keys, can and cannot read.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace burrow::test {

// One direction of one TCP stream, as captured.
struct tcp_direction {
  std::string stream;  // tshark's tcp.stream number
  std::string bytes;
};

// The plaintext of the link's own records in every stream among `directions` that begins with a
// TLS 1.3 handshake whose EXPORTER_SECRET is in `keylog_text`; each direction as one run. Records
// of OpenSSL's before the switch (the handshake's end, hello, welcome) are left out: tshark reads
// those.
std::string open_own_records(const std::vector<tcp_direction>& directions,
                             std::string_view keylog_text);

// RFC 8446's TLS-Exporter over an exporter secret, with the suite's hash `md`.
std::vector<std::uint8_t> tls13_export(const EVP_MD* md, std::span<const std::uint8_t> secret,
                                       std::string_view label,
                                       std::span<const std::uint8_t> context, std::size_t length);

// HKDF-Expand-Label (RFC 8446, section 7.1), written out from the RFC over plain HKDF.
std::vector<std::uint8_t> tls13_expand_label(const EVP_MD* md, std::span<const std::uint8_t> secret,
                                             std::string_view label,
                                             std::span<const std::uint8_t> context,
                                             std::size_t length);

// One TLS 1.3 record (RFC 8446, section 5.2) sealed the plain way: `plain`, its inner `type` and
// `padding` zero bytes under `key`, with the nonce `iv` XOR `sequence`.
std::vector<std::uint8_t> tls13_record(const EVP_CIPHER* cipher, std::span<const std::uint8_t> key,
                                       std::span<const std::uint8_t> iv, std::uint64_t sequence,
                                       std::span<const std::uint8_t> plain, std::uint8_t type = 23,
                                       std::size_t padding = 0);

}  // namespace burrow::test
