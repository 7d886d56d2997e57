// CPU feature checks for the AEAD order, and the suite lists in each order.
#include "tls/cipher_order.hpp"

#if defined(__aarch64__) || defined(__arm__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace burrow::tls {

bool cpu_accelerates_aes_gcm() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
  const unsigned long caps = getauxval(AT_HWCAP);
  return (caps & HWCAP_AES) != 0 && (caps & HWCAP_PMULL) != 0;
#elif defined(__arm__)
  const unsigned long caps = getauxval(AT_HWCAP2);
  return (caps & HWCAP2_AES) != 0 && (caps & HWCAP2_PMULL) != 0;
#else
  return false;
#endif
}

aead_order preferred_aead_order() {
  static const aead_order order =
      cpu_accelerates_aes_gcm() ? aead_order::aes_gcm_first : aead_order::chacha20_first;
  return order;
}

const char* tls13_ciphersuites(aead_order order) {
  return order == aead_order::aes_gcm_first
             ? "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
             : "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384";
}

const char* tls12_cipher_list(aead_order order) {
  return order == aead_order::aes_gcm_first
             ? "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
               "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
               "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
             : "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
               "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
               "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384";
}

}  // namespace burrow::tls
