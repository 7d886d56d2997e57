// HKDF-Expand with HMAC-SHA256: RFC 5869's test vectors, agreement with OpenSSL's own HKDF (which
// session keys used before) for every length up to a few blocks, and the bound on the length.
#include "e2ee/hkdf.hpp"

#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <string>
#include <thread>
#include <vector>

#include "core/secret.hpp"

namespace burrow::e2ee {
namespace hkdf_test {

std::vector<std::uint8_t> bytes(std::string_view hex_text) {
  std::vector<std::uint8_t> out(hex_text.size() / 2);
  EXPECT_EQ(from_hex(hex_text, out), out.size()) << hex_text;
  return out;
}

std::string expand(std::string_view prk_hex, std::string_view info, std::size_t length) {
  auto prk = bytes(prk_hex);
  std::vector<std::uint8_t> out(length);
  if (!hkdf_sha256_expand(prk, info, out)) return "failed";
  return hex(out);
}

// OpenSSL's HKDF in expand-only mode, as an independent reference.
std::string reference(std::span<const std::uint8_t> prk, std::string_view info,
                      std::size_t length) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, OSSL_KDF_NAME_HKDF, nullptr);
  EVP_KDF_CTX* ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  static const char mode[] = "EXPAND_ONLY", digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, const_cast<char*>(mode), 0),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(digest), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::uint8_t*>(prk.data()),
                                        prk.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()),
                                        info.size()),
      OSSL_PARAM_construct_end()};
  std::vector<std::uint8_t> out(length);
  const bool ok = ctx && EVP_KDF_derive(ctx, out.data(), out.size(), params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  return ok ? hex(out) : "reference failed";
}

TEST(Hkdf, Rfc5869TestVectors) {
  // Test case 1: the PRK of its extract step, a short info, 42 bytes.
  EXPECT_EQ(expand("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
                   std::string("\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9"), 42),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
  // Test case 2: an 80-byte info, 82 bytes (three blocks).
  std::string long_info;
  for (int c = 0xb0; c <= 0xff; ++c) long_info.push_back(static_cast<char>(c));
  EXPECT_EQ(
      expand("06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244", long_info, 82),
      "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41"
      "c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
  // Test case 3: no info.
  EXPECT_EQ(expand("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04", "", 42),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
}

TEST(Hkdf, AgreesWithOpensslsHkdfForEveryLengthUpToFourBlocks) {
  std::vector<std::uint8_t> prk(32);
  for (std::size_t i = 0; i < prk.size(); ++i) prk[i] = static_cast<std::uint8_t>(7 * i + 1);
  const std::string info = std::string("burrow-e2ee stream ") + std::string(8, '\x01');
  for (std::size_t length = 1; length <= 128; ++length) {
    std::vector<std::uint8_t> out(length);
    ASSERT_TRUE(hkdf_sha256_expand(prk, info, out)) << length;
    EXPECT_EQ(hex(out), reference(prk, info, length)) << length;
  }
}

TEST(Hkdf, OutputsOver255BlocksAreRefusedAndEachThreadHasItsOwnContext) {
  std::vector<std::uint8_t> prk(32, 1), out(255 * 32 + 1);
  EXPECT_FALSE(hkdf_sha256_expand(prk, "x", out));
  out.resize(255 * 32);
  EXPECT_TRUE(hkdf_sha256_expand(prk, "x", out));
  const std::string expected = reference(prk, "x", 64);
  std::vector<std::string> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < seen.size(); ++t)
    threads.emplace_back([&, t] {
      std::vector<std::uint8_t> mine(64);
      for (int i = 0; i < 200; ++i)
        if (!hkdf_sha256_expand(prk, "x", mine)) return;
      seen[t] = hex(mine);
    });
  for (auto& t : threads) t.join();
  for (const auto& s : seen) EXPECT_EQ(s, expected);
}

}  // namespace hkdf_test
}  // namespace burrow::e2ee
