// Preloaded into a burrow process by bench/openssl-init-pages.sh (an experiment, not part of
// Burrow): before main, tells OpenSSL never to load its error strings, so that the relay's
// resident set can be read without them. Errors then read "lib(20)::reason(134)", not their text.
#include <openssl/crypto.h>
#include <openssl/ssl.h>

__attribute__((constructor)) static void no_error_strings(void) {
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS, NULL);
  OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_SSL_STRINGS, NULL);
}
