// HKDF-Expand: T(i) = HMAC(PRK, T(i-1) | info | i), the output their concatenation.
#include "e2ee/hkdf.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <array>
#include <memory>

#include "tls/certs.hpp"

namespace burrow::e2ee {

namespace {

using mac_ctx = std::unique_ptr<EVP_MAC_CTX, tls::openssl_deleter<&EVP_MAC_CTX_free>>;

// An HMAC context with SHA-256 chosen and no key yet, copied for each block: choosing the digest
// is the lookup by name this saves. One per thread, as OpenSSL's contexts are not shared.
EVP_MAC_CTX* hmac_sha256_template() {
  thread_local const mac_ctx made = [] {
    std::unique_ptr<EVP_MAC, tls::openssl_deleter<&EVP_MAC_free>> mac(
        EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr));
    mac_ctx ctx(mac ? EVP_MAC_CTX_new(mac.get()) : nullptr);
    static const char digest[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>(digest), 0),
        OSSL_PARAM_construct_end()};
    if (ctx && EVP_MAC_CTX_set_params(ctx.get(), params) != 1) ctx.reset();
    return ctx;
  }();
  return made.get();
}

}  // namespace

bool hkdf_sha256_expand(std::span<const std::uint8_t> prk, std::string_view info,
                        std::span<std::uint8_t> out) {
  constexpr std::size_t hash_size = 32;
  EVP_MAC_CTX* base = hmac_sha256_template();
  if (!base || out.size() > 255 * hash_size) return false;
  std::array<std::uint8_t, hash_size> block{};
  std::size_t block_size = 0;  // T(0) is empty
  bool ok = true;
  for (std::size_t done = 0, i = 1; ok && done < out.size(); ++i) {
    mac_ctx ctx(EVP_MAC_CTX_dup(base));
    const auto counter = static_cast<std::uint8_t>(i);
    std::size_t made = 0;
    ok = ctx && EVP_MAC_init(ctx.get(), prk.data(), prk.size(), nullptr) == 1 &&
         EVP_MAC_update(ctx.get(), block.data(), block_size) == 1 &&
         EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(info.data()),
                        info.size()) == 1 &&
         EVP_MAC_update(ctx.get(), &counter, 1) == 1 &&
         EVP_MAC_final(ctx.get(), block.data(), &made, block.size()) == 1 && made == hash_size;
    if (!ok) break;
    block_size = made;
    const std::size_t n = std::min(hash_size, out.size() - done);
    std::copy_n(block.data(), n, out.data() + done);
    done += n;
  }
  OPENSSL_cleanse(block.data(), block.size());
  if (!ok) OPENSSL_cleanse(out.data(), out.size());
  return ok;
}

}  // namespace burrow::e2ee
