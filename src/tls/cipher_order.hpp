// Which AEAD a TLS connection leads with. AES-GCM is the fastest suite on a CPU with AES and
// carry-less multiply instructions and a slow, table-based one without them; ChaCha20-Poly1305
// is fast everywhere in software. So each side lists AES-GCM first only where its CPU
// accelerates it, as BoringSSL and Go do, and our servers, which otherwise choose by their own
// list, follow a client that leads with ChaCha20-Poly1305 (SSL_OP_PRIORITIZE_CHACHA): a phone's
// browser, or an agent on a Raspberry Pi, gets the suite it can run fast.
#pragma once

namespace burrow::tls {

enum class aead_order { aes_gcm_first, chacha20_first };

// x86: AES-NI and PCLMULQDQ; 64-bit Arm: the AES and PMULL extensions; 32-bit Arm: the same,
// from AT_HWCAP2. Any other CPU counts as without.
bool cpu_accelerates_aes_gcm();

// aes_gcm_first where cpu_accelerates_aes_gcm(), chacha20_first elsewhere (read once).
aead_order preferred_aead_order();

// OpenSSL's TLS 1.3 suite list (SSL_CTX_set_ciphersuites) in `order`. The same three suites in
// either order.
const char* tls13_ciphersuites(aead_order order);

// OpenSSL's TLS 1.2 cipher list (SSL_CTX_set_cipher_list) for visitors: forward-secret AEAD
// only, in `order`.
const char* tls12_cipher_list(aead_order order);

}  // namespace burrow::tls
