// The AEAD order: the same suites either way, and the CPU check against the kernel's own list.
#include "tls/cipher_order.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace burrow::tls {
namespace {

std::multiset<std::string> split(const std::string& list) {
  std::multiset<std::string> parts;
  std::istringstream in(list);
  for (std::string part; std::getline(in, part, ':');) parts.insert(part);
  return parts;
}

std::string first_of(const std::string& list) {
  return list.substr(0, list.find(':'));
}

TEST(CipherOrder, BothOrdersHoldTheSameSuites) {
  const std::string aes13 = tls13_ciphersuites(aead_order::aes_gcm_first);
  const std::string chacha13 = tls13_ciphersuites(aead_order::chacha20_first);
  EXPECT_EQ(split(aes13), split(chacha13));
  EXPECT_EQ(split(aes13).size(), 3u);
  EXPECT_EQ(first_of(aes13), "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(first_of(chacha13), "TLS_CHACHA20_POLY1305_SHA256");

  const std::string aes12 = tls12_cipher_list(aead_order::aes_gcm_first);
  const std::string chacha12 = tls12_cipher_list(aead_order::chacha20_first);
  EXPECT_EQ(split(aes12), split(chacha12));
  EXPECT_EQ(split(aes12).size(), 6u);
  EXPECT_EQ(first_of(aes12), "ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_EQ(first_of(chacha12), "ECDHE-ECDSA-CHACHA20-POLY1305");
  for (const auto& suite : split(aes12))  // forward-secret AEAD only
    EXPECT_TRUE(suite.rfind("ECDHE-", 0) == 0 && (suite.find("GCM") != std::string::npos ||
                                                  suite.find("POLY1305") != std::string::npos))
        << suite;
}

TEST(CipherOrder, ThePreferredOrderFollowsTheCpu) {
  EXPECT_EQ(preferred_aead_order(),
            cpu_accelerates_aes_gcm() ? aead_order::aes_gcm_first : aead_order::chacha20_first);
}

#if defined(__x86_64__)
// The kernel's flags for the first CPU: the check must agree with them.
TEST(CipherOrder, TheCpuCheckAgreesWithProcCpuinfo) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo);
  std::set<std::string> flags;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string word; words >> word;) flags.insert(word);
    break;
  }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  EXPECT_EQ(cpu_accelerates_aes_gcm(), flags.count("aes") == 1 && flags.count("pclmulqdq") == 1);
}
#endif

}  // namespace
}  // namespace burrow::tls
