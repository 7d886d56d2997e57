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

}  // namespace burrow::test
