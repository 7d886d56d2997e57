// How much of libcrypto and libssl a process has resident after each step of OpenSSL's start-up,
// and what OPENSSL_init_crypto's opt-outs change. An experiment for bench/openssl-init-pages.sh,
// not part of Burrow. Arguments choose opt-outs passed to OPENSSL_init_crypto before anything
// else: no-add-all (OPENSSL_INIT_NO_ADD_ALL_CIPHERS and _DIGESTS: the legacy name tables),
// no-config (OPENSSL_INIT_NO_LOAD_CONFIG), no-strings (the error strings of libcrypto and libssl).
// Prints, in KiB, the Rss of every mapping, of libcrypto's, of libssl's, and the Anonymous sum.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

static void report(const char* step) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512], name[256] = "";
  long total = 0, crypto = 0, ssl = 0, anon = 0, kb;
  unsigned long from, to;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%lx-%lx ", &from, &to) == 2) {  // a mapping's first line: keep its path
      const char* path = strchr(line, '/');
      snprintf(name, sizeof name, "%s", path ? path : "");
    } else if (sscanf(line, "Rss: %ld kB", &kb) == 1) {
      total += kb;
      if (strstr(name, "libcrypto")) crypto += kb;
      if (strstr(name, "libssl")) ssl += kb;
    } else if (sscanf(line, "Anonymous: %ld kB", &kb) == 1) {
      anon += kb;
    }
  }
  fclose(f);
  printf("  %-22s Rss %5ld  libcrypto %5ld  libssl %4ld  Anonymous %5ld\n", step, total, crypto,
         ssl, anon);
}

int main(int argc, char** argv) {
  uint64_t crypto_opts = 0, ssl_opts = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "no-add-all") == 0) {
      crypto_opts |= OPENSSL_INIT_NO_ADD_ALL_CIPHERS | OPENSSL_INIT_NO_ADD_ALL_DIGESTS;
    } else if (strcmp(argv[i], "no-config") == 0) {
      crypto_opts |= OPENSSL_INIT_NO_LOAD_CONFIG;
      ssl_opts |= OPENSSL_INIT_NO_LOAD_CONFIG;
    } else if (strcmp(argv[i], "no-strings") == 0) {
      crypto_opts |= OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS;
      ssl_opts |= OPENSSL_INIT_NO_LOAD_SSL_STRINGS;
    } else {
      fprintf(stderr, "usage: openssl-init-pages [no-add-all] [no-config] [no-strings]\n");
      return 2;
    }
  }
  report("libraries loaded");
  if (crypto_opts && !OPENSSL_init_crypto(crypto_opts, NULL)) return 1;
  if (!OPENSSL_init_ssl(ssl_opts, NULL)) return 1;
  report("OPENSSL_init_ssl");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  report("SSL_CTX_new");
  EVP_PKEY* key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
  report("P-256 key generated");
  int ok = ctx && key;
  EVP_PKEY_free(key);
  SSL_CTX_free(ctx);
  return ok ? 0 : 1;
}
