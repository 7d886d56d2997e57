// link_tls on real TLS 1.3 sessions made the way asio makes them (an SSL over one half of a BIO
// pair): taking a session over with ciphertext already buffered, batches of many records, a
// peer's close_notify, and garbage from the wire.
#include "link/link_tls.hpp"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::link {
namespace {

using namespace std::chrono_literals;

// An SSL over the internal half of a BIO pair, as asio::ssl::stream's engine sets it up.
struct engine {
  SSL* ssl = nullptr;
  BIO* ext = nullptr;
  engine(SSL_CTX* ctx, bool server) {
    ssl = SSL_new(ctx);
    BIO* internal = nullptr;
    BIO_new_bio_pair(&internal, 0, &ext, 0);
    SSL_set_bio(ssl, internal, internal);
    if (server) {
      SSL_set_accept_state(ssl);
    } else {
      SSL_set_verify(ssl, SSL_VERIFY_NONE, nullptr);
      SSL_set_connect_state(ssl);
    }
  }
  ~engine() {
    BIO_free(ext);
    SSL_free(ssl);
  }
};

// Moves whatever `from` wrote into `to`'s pair; true when anything moved.
bool shuttle(engine& from, engine& to) {
  bool moved = false;
  char buf[4096];
  for (int n; (n = BIO_read(from.ext, buf, sizeof buf)) > 0; moved = true)
    EXPECT_EQ(BIO_write(to.ext, buf, n), n);
  return moved;
}

class LinkTls : public ::testing::Test {
 protected:
  tls::key_pair identity = tls::make_self_signed("link tls test", {"localhost"}, 24h);
  boost::asio::ssl::context server_ctx = tls::make_server_context(identity, {"burrow/1"});
  boost::asio::ssl::context client_ctx = tls::make_client_context({"burrow/1"});
  engine server{server_ctx.native_handle(), true};
  engine client{client_ctx.native_handle(), false};

  void SetUp() override {
    for (int i = 0; i < 20; ++i) {
      int c = SSL_do_handshake(client.ssl), s = SSL_do_handshake(server.ssl);
      bool moved = shuttle(client, server);
      moved = shuttle(server, client) || moved;
      if (c == 1 && s == 1 && !moved) return;
    }
    FAIL() << "the handshake did not finish";
  }
};

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  RAND_bytes(v.data(), static_cast<int>(n));
  return v;
}

TEST_F(LinkTls, TakesOverCiphertextAlreadyInTheEngine) {
  // The server's ticket and a first message wait in the client's BIO pair, unread by OpenSSL.
  ASSERT_EQ(SSL_write(server.ssl, "welcome", 7), 7);
  shuttle(server, client);
  link_tls taken(client.ssl);
  byte_buffer plain;
  ASSERT_FALSE(taken.decrypt(plain));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(plain.data()), plain.size()), "welcome");
}

TEST_F(LinkTls, ABatchBecomesManyRecordsAndComesBackWhole) {
  link_tls a(client.ssl), b(server.ssl);
  auto sent = random_bytes(300 * 1024 + 7);
  ASSERT_FALSE(a.encrypt(sent));
  byte_buffer wire;
  a.take_records(wire);
  // Every record is at most 16 KiB of plaintext plus its header and tag.
  EXPECT_GE(wire.size(), sent.size() + 19 * 22);
  // Delivered in pieces that cut records anywhere.
  byte_buffer got;
  for (std::size_t at = 0; at < wire.size();) {
    std::size_t n = std::min<std::size_t>(1000 + at % 777, wire.size() - at);
    std::copy_n(wire.data() + at, n, b.prepare_read(n));
    b.received(n);
    ASSERT_FALSE(b.decrypt(got));
    at += n;
  }
  ASSERT_EQ(got.size(), sent.size());
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.data()));
  // And the other way, in one piece.
  auto back = random_bytes(40 * 1024);
  ASSERT_FALSE(b.encrypt(back));
  byte_buffer wire_back;
  b.take_records(wire_back);
  std::copy_n(wire_back.data(), wire_back.size(), a.prepare_read(wire_back.size()));
  a.received(wire_back.size());
  byte_buffer got_back;
  ASSERT_FALSE(a.decrypt(got_back));
  EXPECT_TRUE(
      std::equal(back.begin(), back.end(), got_back.data(), got_back.data() + got_back.size()));
}

TEST_F(LinkTls, ThePeersCloseNotifyIsEndOfFile) {
  link_tls a(client.ssl), b(server.ssl);
  ASSERT_GE(SSL_shutdown(client.ssl), 0);
  byte_buffer wire;
  a.take_records(wire);
  ASSERT_GT(wire.size(), 0u);
  std::copy_n(wire.data(), wire.size(), b.prepare_read(wire.size()));
  b.received(wire.size());
  byte_buffer got;
  EXPECT_EQ(b.decrypt(got), boost::asio::error::eof);
}

TEST_F(LinkTls, GarbageFromTheWireIsAnErrorNotACrash) {
  link_tls b(server.ssl);
  auto junk = random_bytes(4096);
  junk[0] = 23;  // an application-data record header, then nonsense
  junk[1] = 3;
  junk[2] = 3;
  junk[3] = 0x0f;  // 4,000 bytes: the whole record is here
  junk[4] = 0xa0;
  std::copy(junk.begin(), junk.end(), b.prepare_read(junk.size()));
  b.received(junk.size());
  byte_buffer got;
  auto ec = b.decrypt(got);
  EXPECT_TRUE(ec);
  EXPECT_EQ(got.size(), 0u);
  // The session stays failed.
  EXPECT_TRUE(b.encrypt(junk) || b.decrypt(got));
}

TEST_F(LinkTls, ASessionWithRecordsNotYetSentCannotBeTakenOver) {
  ASSERT_EQ(SSL_write(client.ssl, "unsent", 6), 6);  // in the pair, not yet moved to the socket
  EXPECT_THROW(link_tls{client.ssl}, std::runtime_error);
}

}  // namespace
}  // namespace burrow::link
