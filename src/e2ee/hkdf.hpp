// HKDF-Expand (RFC 5869) with HMAC-SHA256, for the keys of end-to-end session streams.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace burrow::e2ee {

// Fills `out` (at most 255 * 32 bytes) with HKDF-Expand(prk, info). False when OpenSSL fails or
// `out` is too long. Through HMAC with SHA-256 fetched once per thread: OpenSSL 3's HKDF (EVP_KDF)
// looks up its digest by name and builds its parameters on every call, about 20,000 instructions
// for one block where the hashing itself takes a tenth of that.
bool hkdf_sha256_expand(std::span<const std::uint8_t> prk, std::string_view info,
                        std::span<std::uint8_t> out);

}  // namespace burrow::e2ee
