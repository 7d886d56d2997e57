// What one TLS 1.3 record costs through OpenSSL, against the AEAD alone: the numbers behind
// "End to end at 50 keep-alive connections: where each request's time goes" in
// docs/performance.md. A client and a server session talk through the same buffer BIO as the
// end-to-end sessions and the links (tls/buffer_bio), the bytes moved between them by hand; one
// iteration is one record written by the client and read by the server. The AEAD rows do what
// TLS 1.3's record protection does per record (nonce, 5-byte header as associated data, seal,
// tag; then open) through EVP, with no record layer around it.
//
//   build/release/bench/micro/burrow_micro_tls --benchmark_filter=Record
#include <benchmark/benchmark.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tls/buffer_bio.hpp"
#include "tls/certs.hpp"

namespace {

using namespace burrow;

const char* suite_name(int suite) {
  return suite == 0 ? "TLS_AES_128_GCM_SHA256" : "TLS_CHACHA20_POLY1305_SHA256";
}

// Moves what `from` wrote to `to`'s input.
void carry(tls::bio_buffers& from, tls::bio_buffers& to) {
  if (from.out.empty()) return;
  std::memcpy(to.in.prepare(from.out.size()), from.out.data(), from.out.size());
  to.in.commit(from.out.size());
  from.out.consume(from.out.size());
}

struct session_pair {
  SSL_CTX* server_ctx = nullptr;
  SSL_CTX* client_ctx = nullptr;
  SSL* server = nullptr;
  SSL* client = nullptr;
  tls::bio_buffers server_io, client_io;

  explicit session_pair(const char* suite) {
    auto pair = tls::make_self_signed("bench", {"bench.invalid"}, std::chrono::hours(1));
    auto cert = tls::parse_certificate(pair.cert_pem);
    auto key = tls::parse_private_key(pair.key_pem);
    server_ctx = SSL_CTX_new(TLS_server_method());
    client_ctx = SSL_CTX_new(TLS_client_method());
    if (!server_ctx || !client_ctx || SSL_CTX_use_certificate(server_ctx, cert.get()) != 1 ||
        SSL_CTX_use_PrivateKey(server_ctx, key.get()) != 1)
      throw std::runtime_error("cannot make the TLS contexts");
    for (SSL_CTX* ctx : {server_ctx, client_ctx}) {
      SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
      SSL_CTX_set_ciphersuites(ctx, suite);
    }
    SSL_CTX_set_num_tickets(server_ctx, 0);
    server = SSL_new(server_ctx);
    client = SSL_new(client_ctx);
    BIO* server_bio = tls::new_buffer_bio(&server_io);
    BIO* client_bio = tls::new_buffer_bio(&client_io);
    if (!server || !client || !server_bio || !client_bio)
      throw std::runtime_error("cannot make the TLS sessions");
    SSL_set_bio(server, server_bio, server_bio);  // one BIO both ways, as secure_stream
    SSL_set_bio(client, client_bio, client_bio);
    // As secure_stream: a busy session keeps its record buffers.
    SSL_clear_mode(server, SSL_MODE_RELEASE_BUFFERS);
    SSL_clear_mode(client, SSL_MODE_RELEASE_BUFFERS);
    SSL_set_accept_state(server);
    SSL_set_connect_state(client);
    for (int i = 0; i < 8 && !(SSL_is_init_finished(client) && SSL_is_init_finished(server)); ++i) {
      SSL_do_handshake(client);
      carry(client_io, server_io);
      SSL_do_handshake(server);
      carry(server_io, client_io);
    }
    if (!SSL_is_init_finished(client) || !SSL_is_init_finished(server))
      throw std::runtime_error("the handshake did not finish");
  }
  ~session_pair() {
    SSL_free(client);
    SSL_free(server);
    SSL_CTX_free(client_ctx);
    SSL_CTX_free(server_ctx);
  }
  session_pair(const session_pair&) = delete;
  session_pair& operator=(const session_pair&) = delete;
};

// One record of state.range(1) bytes, client to server, through SSL_write_ex and SSL_read_ex.
void Record(benchmark::State& state) {
  session_pair p(suite_name(static_cast<int>(state.range(0))));
  const auto size = static_cast<std::size_t>(state.range(1));
  std::vector<std::uint8_t> plain(size, 'a'), got(size);
  for (auto _ : state) {
    std::size_t n = 0, m = 0;
    if (SSL_write_ex(p.client, plain.data(), size, &n) != 1 || n != size) {
      state.SkipWithError("SSL_write_ex failed");
      break;
    }
    carry(p.client_io, p.server_io);
    if (SSL_read_ex(p.server, got.data(), got.size(), &m) != 1 || m != size) {
      state.SkipWithError("SSL_read_ex failed");
      break;
    }
  }
  state.SetLabel(SSL_get_cipher(p.client));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

// The same protection by EVP alone: a nonce per record, the header as associated data.
void Aead(benchmark::State& state) {
  const EVP_CIPHER* cipher = state.range(0) == 0 ? EVP_aes_128_gcm() : EVP_chacha20_poly1305();
  const auto size = static_cast<std::size_t>(state.range(1));
  std::vector<std::uint8_t> plain(size, 'a'), sealed(size), opened(size);
  unsigned char key[32] = {1}, nonce[12] = {2}, header[5] = {23, 3, 3, 0, 0}, tag[16];
  EVP_CIPHER_CTX* enc = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX* dec = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(enc, cipher, nullptr, key, nullptr);
  EVP_DecryptInit_ex(dec, cipher, nullptr, key, nullptr);
  const int len = static_cast<int>(size);
  std::uint64_t seq = 0;
  for (auto _ : state) {
    std::memcpy(nonce + 4, &++seq, sizeof seq);
    int out = 0, fin = 0;
    bool ok = EVP_EncryptInit_ex(enc, nullptr, nullptr, nullptr, nonce) == 1 &&
              EVP_EncryptUpdate(enc, nullptr, &out, header, sizeof header) == 1 &&
              EVP_EncryptUpdate(enc, sealed.data(), &out, plain.data(), len) == 1 &&
              EVP_EncryptFinal_ex(enc, sealed.data() + out, &fin) == 1 &&
              EVP_CIPHER_CTX_ctrl(enc, EVP_CTRL_AEAD_GET_TAG, sizeof tag, tag) == 1 &&
              EVP_DecryptInit_ex(dec, nullptr, nullptr, nullptr, nonce) == 1 &&
              EVP_CIPHER_CTX_ctrl(dec, EVP_CTRL_AEAD_SET_TAG, sizeof tag, tag) == 1 &&
              EVP_DecryptUpdate(dec, nullptr, &out, header, sizeof header) == 1 &&
              EVP_DecryptUpdate(dec, opened.data(), &out, sealed.data(), len) == 1 &&
              EVP_DecryptFinal_ex(dec, opened.data() + out, &fin) == 1;
    if (!ok) {
      state.SkipWithError("AEAD failed");
      break;
    }
  }
  EVP_CIPHER_CTX_free(enc);
  EVP_CIPHER_CTX_free(dec);
  state.SetLabel(EVP_CIPHER_get0_name(cipher));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}

// Suites: 0 AES-128-GCM, 1 ChaCha20-Poly1305. Sizes: an HTTP request, the 1 KiB column's
// response (head and body), and a full record.
void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"suite", "bytes"});
  for (int suite : {0, 1})
    for (int bytes : {100, 1300, 16384}) b->Args({suite, bytes});
}

BENCHMARK(Record)->Apply(sizes);
BENCHMARK(Aead)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
