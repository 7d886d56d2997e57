// The link's own records: what one side seals the other opens, in any pieces, under each TLS 1.3
// AEAD; a changed, cut, replayed or reordered record, or one sealed by the wrong side, is an
// error; both sides move to the next key at the same record; and keys come from real TLS 1.3
// sessions' exporters, equal at both ends only for the same session.
#include "link/record_protection.hpp"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "harness/link_records.hpp"
#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::link {
namespace record_protection_test {  // named: the unity build puts test files side by side

using namespace std::chrono_literals;

std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  RAND_bytes(v.data(), static_cast<int>(n));
  return v;
}

// An exporter with a fixed secret: material depends on the context alone, as the TLS exporter's
// does within one session.
record_protection::exporter fixed_keys(std::uint8_t secret) {
  return [secret](std::string_view context, std::span<std::uint8_t> out) {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::uint8_t>(secret * 31 + i * 7 + context[i % context.size()]);
    return true;
  };
}

struct pair_of_ends {
  record_protection dialer, acceptor;
  pair_of_ends(record_cipher c, std::uint64_t per_key = record_protection::default_records_per_key,
               std::uint8_t secret = 1)
      : dialer(c, fixed_keys(secret), true, per_key),
        acceptor(c, fixed_keys(secret), false, per_key) {}
};

std::string text(const byte_buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

class RecordProtection : public ::testing::TestWithParam<record_cipher> {};

TEST_P(RecordProtection, WhatOneSideSealsTheOtherOpensInAnyPieces) {
  pair_of_ends ends(GetParam());
  auto sent = random_bytes(300 * 1024 + 7);
  byte_buffer wire;
  ASSERT_FALSE(ends.dialer.seal(sent, wire));
  // 19 records: 18 full ones and the rest, each with a header, an inner type and a tag.
  EXPECT_EQ(wire.size(), sent.size() + 19 * (5 + 1 + 16));
  byte_buffer got, pending;
  for (std::size_t at = 0; at < wire.size();) {
    std::size_t n = std::min<std::size_t>(1000 + at % 777, wire.size() - at);
    pending.append(wire.data() + at, n);
    std::size_t used = 0;
    ASSERT_FALSE(ends.acceptor.open(pending.bytes(), got, used));
    pending.consume(used);
    at += n;
  }
  EXPECT_TRUE(pending.empty());
  ASSERT_EQ(got.size(), sent.size());
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), got.data()));
  // And the other way.
  byte_buffer back, back_got;
  ASSERT_FALSE(ends.acceptor.seal(sent, back));
  std::size_t used = 0;
  ASSERT_FALSE(ends.dialer.open(back.bytes(), back_got, used));
  EXPECT_EQ(used, back.size());
  EXPECT_EQ(text(back_got), text(got));
}

// The record TLS 1.3 (RFC 8446, section 5.2) makes of `plain` with this key, IV and sequence
// number, computed the plain way: nonce, header as associated data, data and inner type, tag.
std::vector<std::uint8_t> tls13_record(record_cipher c, std::span<const std::uint8_t> key,
                                       std::span<const std::uint8_t> iv, std::uint64_t sequence,
                                       std::span<const std::uint8_t> plain) {
  const EVP_CIPHER* cipher = c == record_cipher::aes_128_gcm   ? EVP_aes_128_gcm()
                             : c == record_cipher::aes_256_gcm ? EVP_aes_256_gcm()
                                                               : EVP_chacha20_poly1305();
  return test::tls13_record(cipher, key, iv, sequence, plain);
}

TEST_P(RecordProtection, RecordsAreTls13RecordsUnderTheExportedKeys) {
  const record_cipher c = GetParam();
  const std::size_t key_size = c == record_cipher::aes_128_gcm ? 16 : 32;
  std::vector<std::uint8_t> material(key_size + 12);
  ASSERT_TRUE(fixed_keys(5)("dialer key 0", material));
  const std::span<const std::uint8_t> key(material.data(), key_size),
      iv(material.data() + key_size, 12);
  // Opened three ways: into a buffer, into a span with room for the data alone (as a reader of
  // full records has), and into one with room for the inner type too.
  for (int way = 0; way < 3; ++way) {
    record_protection dialer(c, fixed_keys(5), true), acceptor(c, fixed_keys(5), false);
    std::uint64_t sequence = 0;
    for (std::size_t size : {1, 100, 1300, 4095, 4096, 4097, 16384}) {
      const auto plain = random_bytes(size);
      byte_buffer wire;
      ASSERT_FALSE(dialer.seal(plain, wire));
      const auto expected = tls13_record(c, key, iv, sequence++, plain);
      ASSERT_EQ(wire.size(), expected.size()) << size;
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), wire.data())) << size;
      std::vector<std::uint8_t> got(size + (way == 2 ? 1 : 0));
      std::size_t used = 0, produced = 0;
      if (way == 0) {
        byte_buffer opened;
        ASSERT_FALSE(acceptor.open(wire.bytes(), opened, used)) << size;
        produced = opened.size();
        std::copy_n(opened.data(), std::min(produced, got.size()), got.begin());
      } else {
        ASSERT_FALSE(acceptor.open(wire.bytes(), got, used, produced)) << size << " " << way;
      }
      EXPECT_EQ(used, wire.size());
      ASSERT_EQ(produced, size);
      EXPECT_TRUE(std::equal(plain.begin(), plain.end(), got.begin())) << size << " " << way;
    }
  }
}

TEST_P(RecordProtection, EveryChangedByteIsCaught) {
  pair_of_ends ends(GetParam());
  const std::string message = "a frame of the link";
  byte_buffer wire;
  ASSERT_FALSE(ends.dialer.seal(
      {reinterpret_cast<const std::uint8_t*>(message.data()), message.size()}, wire));
  const std::size_t record = wire.size();
  // Bytes after the record, so that a changed length never just waits for more.
  std::vector<std::uint8_t> good(wire.data(), wire.data() + wire.size());
  good.resize(record + 600, 0);
  for (std::size_t i = 0; i < record; ++i) {
    auto bad = good;
    bad[i] ^= 0x01;
    record_protection fresh(GetParam(), fixed_keys(1), false);
    byte_buffer got;
    std::size_t used = 0;
    auto ec = fresh.open(bad, got, used);
    EXPECT_TRUE(ec) << "byte " << i;
    EXPECT_EQ(used, 0u);
    EXPECT_EQ(got.size(), 0u);
  }
}

TEST_P(RecordProtection, ReplayedReorderedOrMisdirectedRecordsFail) {
  pair_of_ends ends(GetParam());
  byte_buffer first, second;
  const std::uint8_t a[] = {1, 2, 3}, b[] = {4, 5, 6};
  ASSERT_FALSE(ends.dialer.seal(a, first));
  ASSERT_FALSE(ends.dialer.seal(b, second));
  byte_buffer got;
  std::size_t used = 0;
  // The second record first: its nonce is not the one expected.
  EXPECT_EQ(ends.acceptor.open(second.bytes(), got, used), record_error::authentication_failed);
  pair_of_ends again(GetParam());
  byte_buffer one, two;
  ASSERT_FALSE(again.dialer.seal(a, one));
  ASSERT_FALSE(again.acceptor.open(one.bytes(), got, used));
  // The same record again.
  EXPECT_EQ(again.acceptor.open(one.bytes(), got, used), record_error::authentication_failed);
  // A record the dialer sealed, given back to the dialer (reflected): the wrong direction's key.
  ASSERT_FALSE(again.dialer.seal(b, two));
  EXPECT_EQ(again.dialer.open(two.bytes(), got, used), record_error::authentication_failed);
  // Another session's keys.
  pair_of_ends other(GetParam(), record_protection::default_records_per_key, 2);
  byte_buffer three;
  ASSERT_FALSE(other.dialer.seal(a, three));
  pair_of_ends mine(GetParam());
  EXPECT_EQ(mine.acceptor.open(three.bytes(), got, used), record_error::authentication_failed);
}

TEST_P(RecordProtection, BothSidesTakeTheNextKeyAtTheSameRecord) {
  pair_of_ends ends(GetParam(), 3);
  const std::uint8_t same[16] = {};
  std::vector<std::string> records;
  for (int i = 0; i < 10; ++i) {
    byte_buffer wire, got;
    ASSERT_FALSE(ends.dialer.seal(same, wire));
    std::size_t used = 0;
    ASSERT_FALSE(ends.acceptor.open(wire.bytes(), got, used)) << "record " << i;
    EXPECT_EQ(got.size(), sizeof same);
    records.push_back(text(wire));
  }
  EXPECT_EQ(ends.dialer.send_generation(), 3u);
  EXPECT_EQ(ends.acceptor.receive_generation(), 3u);
  EXPECT_EQ(ends.dialer.sent_in_key(), 1u);
  EXPECT_EQ(ends.acceptor.received_in_key(), 1u);
  EXPECT_EQ(ends.acceptor.send_generation(), 0u);  // the other direction sent nothing
  // The same plaintext never gives the same record, within a key or across keys.
  std::sort(records.begin(), records.end());
  EXPECT_EQ(std::adjacent_find(records.begin(), records.end()), records.end());
  // A side that did not move on cannot read the new key's records.
  pair_of_ends late(GetParam(), 4);
  pair_of_ends early(GetParam(), 3);
  for (int i = 0; i < 4; ++i) {
    byte_buffer wire, got;
    ASSERT_FALSE(early.dialer.seal(same, wire));
    std::size_t used = 0;
    auto ec = late.acceptor.open(wire.bytes(), got, used);
    EXPECT_EQ(!ec, i < 3) << "record " << i;
  }
}

TEST_P(RecordProtection, ABadHeaderIsAnErrorBeforeItsBodyArrives) {
  pair_of_ends ends(GetParam());
  byte_buffer got;
  std::size_t used = 0;
  struct bad_header {
    std::vector<std::uint8_t> header;
    record_error error;
    record_alert alert;  // what the peer is told, as RFC 8446 says (sections 5 and 5.2)
  };
  const std::vector<bad_header> headers = {
      // A ChangeCipherSpec, a handshake and an alert in the clear, after the handshake.
      {{20, 3, 3, 0, 1}, record_error::unexpected_message, record_alert::unexpected_message},
      {{22, 3, 3, 0, 40}, record_error::unexpected_message, record_alert::unexpected_message},
      {{21, 3, 3, 0, 2}, record_error::unexpected_message, record_alert::unexpected_message},
      // Longer than TLS 1.3 allows (2^14 + 256): told from the header, before any decryption.
      {{23, 3, 3, 0x41, 0x01}, record_error::record_overflow, record_alert::record_overflow},
      {{23, 3, 3, 0xff, 0xff}, record_error::record_overflow, record_alert::record_overflow},
      // Not TLS 1.2's version field; shorter than a tag.
      {{23, 3, 1, 0, 40}, record_error::bad_record, record_alert::bad_record_mac},
      {{23, 3, 3, 0, 16}, record_error::bad_record, record_alert::bad_record_mac}};
  for (const auto& h : headers) {
    const auto ec = ends.acceptor.open(h.header, got, used);
    EXPECT_EQ(ec, h.error) << int(h.header[0]) << " " << ec.message();
    EXPECT_EQ(alert_for(ec), h.alert) << int(h.header[0]);
    EXPECT_EQ(used, 0u);
  }
  // The most TLS 1.3 allows is a record.
  const std::uint8_t longest[] = {23, 3, 3, 0x41, 0x00};
  EXPECT_FALSE(ends.acceptor.open(longest, got, used));
  // A header alone, or part of one, waits for the rest.
  const std::uint8_t partial[] = {23, 3, 3, 0x41, 0x00};
  EXPECT_FALSE(ends.acceptor.open(partial, got, used));
  EXPECT_EQ(used, 0u);
  EXPECT_FALSE(ends.acceptor.open(std::span(partial, 3), got, used));
  EXPECT_EQ(used, 0u);
}

TEST_P(RecordProtection, RecordsBeforeABadOneAreDelivered) {
  pair_of_ends ends(GetParam());
  byte_buffer wire, got;
  const std::uint8_t a[] = {7, 7, 7};
  ASSERT_FALSE(ends.dialer.seal(a, wire));
  const std::size_t first = wire.size();
  ASSERT_FALSE(ends.dialer.seal(a, wire));
  wire.data()[wire.size() - 1] ^= 0x80;  // the second record's tag
  std::size_t used = 0;
  EXPECT_EQ(ends.acceptor.open(wire.bytes(), got, used), record_error::authentication_failed);
  EXPECT_EQ(used, first);
  EXPECT_EQ(got.size(), sizeof a);
}

TEST_P(RecordProtection, AlertsEndTheOpeningAfterTheDataBeforeThem) {
  pair_of_ends ends(GetParam());
  byte_buffer wire, got;
  const std::uint8_t a[] = {1, 2, 3};
  ASSERT_FALSE(ends.dialer.seal(a, wire));
  ASSERT_FALSE(ends.dialer.seal_alert(record_alert::close_notify, wire));
  const std::size_t closed = wire.size();
  ASSERT_FALSE(ends.dialer.seal(a, wire));  // nothing should follow; the opening stops before it
  std::size_t used = 0;
  EXPECT_EQ(ends.acceptor.open(wire.bytes(), got, used), record_error::close_notify);
  EXPECT_EQ(used, closed);
  EXPECT_EQ(got.size(), sizeof a);
  // A fatal alert is the peer giving up; the other direction says so too.
  byte_buffer back, nothing;
  ASSERT_FALSE(ends.acceptor.seal_alert(record_alert::bad_record_mac, back));
  EXPECT_EQ(ends.dialer.open(back.bytes(), nothing, used), record_error::peer_alert);
  EXPECT_EQ(used, back.size());
  EXPECT_EQ(nothing.size(), 0u);
}

TEST_P(RecordProtection, OpeningIntoASpanStopsBeforeARecordThatDoesNotFit) {
  pair_of_ends ends(GetParam());
  byte_buffer wire;
  const auto first = random_bytes(100), second = random_bytes(1000);
  ASSERT_FALSE(ends.dialer.seal(first, wire));
  const std::size_t first_size = wire.size();
  ASSERT_FALSE(ends.dialer.seal(second, wire));
  EXPECT_EQ(record_protection::whole_record(wire.bytes()), first_size);
  EXPECT_EQ(record_protection::whole_record(wire.bytes().first(first_size - 1)), 0u);
  std::vector<std::uint8_t> room(500);
  std::size_t used = 0, produced = 0;
  ASSERT_FALSE(ends.acceptor.open(wire.bytes(), room, used, produced));
  EXPECT_EQ(used, first_size);  // the second record's 1,000 bytes do not fit in 400
  ASSERT_EQ(produced, first.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), room.begin()));
  room.resize(1001);  // the plaintext and its inner type
  ASSERT_FALSE(ends.acceptor.open(wire.bytes().subspan(used), room, used, produced));
  ASSERT_EQ(produced, second.size());
  EXPECT_TRUE(std::equal(second.begin(), second.end(), room.begin()));
}

INSTANTIATE_TEST_SUITE_P(Ciphers, RecordProtection,
                         ::testing::Values(record_cipher::aes_128_gcm, record_cipher::aes_256_gcm,
                                           record_cipher::chacha20_poly1305),
                         [](const ::testing::TestParamInfo<record_cipher>& info) {
                           switch (info.param) {
                             case record_cipher::aes_128_gcm:
                               return std::string("Aes128Gcm");
                             case record_cipher::aes_256_gcm:
                               return std::string("Aes256Gcm");
                             case record_cipher::chacha20_poly1305:
                               break;
                           }
                           return std::string("Chacha20Poly1305");
                         });

// Keys that cannot be made are an error at once, and a key that cannot be renewed stops the side.
TEST(RecordProtectionKeys, AnExporterThatFailsIsAnError) {
  auto never = [](std::string_view, std::span<std::uint8_t>) { return false; };
  EXPECT_THROW(record_protection(record_cipher::aes_128_gcm, never, true), std::runtime_error);
  int calls = 0;
  auto twice = [&calls](std::string_view c, std::span<std::uint8_t> out) {
    std::fill(out.begin(), out.end(), static_cast<std::uint8_t>(c.size()));
    return ++calls <= 2;  // each direction's first key, then nothing
  };
  record_protection p(record_cipher::aes_128_gcm, twice, true, 2);
  byte_buffer wire;
  const std::uint8_t a[] = {1};
  EXPECT_FALSE(p.seal(a, wire));
  EXPECT_EQ(p.seal(a, wire), record_error::crypto_failed);
}

// Sessions made the way asio makes them, with a memory BIO pair, to a finished handshake.
struct tls_session_pair {
  tls::key_pair identity = tls::make_self_signed("records test", {"localhost"}, 24h);
  boost::asio::ssl::context server_ctx = tls::make_server_context(identity, {"burrow/1"});
  boost::asio::ssl::context client_ctx = tls::make_client_context({"burrow/1"});
  SSL* server = SSL_new(server_ctx.native_handle());
  SSL* client = SSL_new(client_ctx.native_handle());
  bool done = false;

  explicit tls_session_pair(const char* suites, SSL_CTX_keylog_cb_func log = nullptr) {
    if (log) {
      SSL_CTX_set_keylog_callback(client_ctx.native_handle(), log);
      SSL_free(client);
      client = SSL_new(client_ctx.native_handle());
    }
    SSL_set_ciphersuites(client, suites);
    SSL_set_ciphersuites(server, suites);
    BIO *a = nullptr, *b = nullptr;
    BIO_new_bio_pair(&a, 0, &b, 0);
    SSL_set_bio(client, a, a);
    SSL_set_bio(server, b, b);
    SSL_set_verify(client, SSL_VERIFY_NONE, nullptr);
    SSL_set_connect_state(client);
    SSL_set_accept_state(server);
    for (int i = 0; i < 20 && !done; ++i) {
      int c = SSL_do_handshake(client), s = SSL_do_handshake(server);
      done = c == 1 && s == 1;
    }
  }
  ~tls_session_pair() {
    SSL_free(client);
    SSL_free(server);
  }
};

TEST(RecordProtectionKeys, EachTls13SuiteGivesBothEndsTheSameKeys) {
  for (const char* suite :
       {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}) {
    tls_session_pair s(suite);
    ASSERT_TRUE(s.done) << suite;
    auto dialer = record_protection::from_session(s.client, true);
    auto acceptor = record_protection::from_session(s.server, false);
    const std::string hello = "hello over the link's own records";
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(hello.data()),
                                              hello.size());
    byte_buffer wire, got;
    ASSERT_FALSE(dialer->seal(bytes, wire));
    std::size_t used = 0;
    ASSERT_FALSE(acceptor->open(wire.bytes(), got, used)) << suite;
    EXPECT_EQ(text(got), hello);
    // Another session's keys differ, though the suite is the same.
    tls_session_pair other(suite);
    ASSERT_TRUE(other.done);
    auto stranger = record_protection::from_session(other.server, false);
    byte_buffer nothing;
    EXPECT_EQ(stranger->open(wire.bytes(), nothing, used), record_error::authentication_failed);
    // The end-to-end session's own records have keys of their own.
    auto other_label = record_protection::from_session(s.server, false, "EXPORTER-other-records");
    EXPECT_EQ(other_label->open(wire.bytes(), nothing, used), record_error::authentication_failed);
    // Both ends claiming to be the dialer cannot talk.
    auto confused = record_protection::from_session(s.server, true);
    EXPECT_EQ(confused->open(wire.bytes(), nothing, used), record_error::authentication_failed);
  }
}

std::string key_log;  // what the client context of the next test logs

TEST(RecordProtectionKeys, TheCaptureTestsDeriveTheSameKeysFromAKeyLog) {
  // The capture tests open the links' records with keys they derive from an NSS key log's
  // EXPORTER_SECRET (harness/link_records.cpp); those must be OpenSSL's exporter's.
  for (const char* suite : {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"}) {
    key_log.clear();
    tls_session_pair s(suite, [](const SSL*, const char* line) { (key_log += line) += '\n'; });
    ASSERT_TRUE(s.done);
    std::istringstream lines(key_log);
    std::vector<std::uint8_t> secret;
    for (std::string label, random, hex; lines >> label >> random >> hex;)
      if (label == "EXPORTER_SECRET")
        for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
          secret.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    ASSERT_FALSE(secret.empty()) << key_log;
    const std::string label = "EXPORTER-burrow-link-records", context = "dialer key 0";
    std::vector<std::uint8_t> ours(44), openssl(44);
    ASSERT_EQ(SSL_export_keying_material(
                  s.client, openssl.data(), openssl.size(), label.data(), label.size(),
                  reinterpret_cast<const unsigned char*>(context.data()), context.size(), 1),
              1);
    ours = test::tls13_export(
        std::string_view(suite).ends_with("SHA384") ? EVP_sha384() : EVP_sha256(), secret, label,
        {reinterpret_cast<const std::uint8_t*>(context.data()), context.size()}, ours.size());
    EXPECT_EQ(ours, openssl) << suite;
  }
}

TEST(RecordProtectionKeys, ASessionThatIsNotEstablishedHasNoKeys) {
  boost::asio::ssl::context ctx = tls::make_client_context({"burrow/1"});
  SSL* fresh = SSL_new(ctx.native_handle());
  EXPECT_THROW(record_protection::from_session(fresh, true), std::runtime_error);
  EXPECT_THROW(record_protection::from_session(nullptr, true), std::runtime_error);
  SSL_free(fresh);
}

}  // namespace record_protection_test
}  // namespace burrow::link
