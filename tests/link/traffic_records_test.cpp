// Own records under a TLS 1.3 session's traffic secrets, checked against records made the plain
// way from RFC 8446 (keys by HKDF-Expand-Label written out over HKDF, records by one AEAD call):
// ours go on from the sequence number OpenSSL's left off at; the peer's padded records, its
// KeyUpdate (with or without a request for ours) and the next key after it; our own KeyUpdate
// after records_per_key records; and what a client may not send after the handshake.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <string>
#include <vector>

#include "harness/link_records.hpp"
#include "link/record_protection.hpp"

namespace burrow::link {
namespace traffic_records_test {  // named: the unity build puts test files side by side

using bytes = std::vector<std::uint8_t>;

struct suite {
  record_cipher cipher;
  const EVP_CIPHER* evp;
  const EVP_MD* md;
  std::size_t key_size;
};

const suite suites[] = {
    {record_cipher::aes_128_gcm, EVP_aes_128_gcm(), EVP_sha256(), 16},
    {record_cipher::aes_256_gcm, EVP_aes_256_gcm(), EVP_sha384(), 32},
    {record_cipher::chacha20_poly1305, EVP_chacha20_poly1305(), EVP_sha256(), 32},
};

// One direction's keys the RFC's way, generation by generation.
struct reference_keys {
  const suite& s;
  bytes secret;
  bytes key() const { return test::tls13_expand_label(s.md, secret, "key", {}, s.key_size); }
  bytes iv() const { return test::tls13_expand_label(s.md, secret, "iv", {}, 12); }
  void update() {
    secret = test::tls13_expand_label(s.md, secret, "traffic upd", {}, secret.size());
  }
  bytes record(std::uint64_t sequence, const bytes& plain, std::uint8_t type = 23,
               std::size_t padding = 0) const {
    return test::tls13_record(s.evp, key(), iv(), sequence, plain, type, padding);
  }
};

bytes secret_of(const suite& s, std::uint8_t seed) {
  bytes out(static_cast<std::size_t>(EVP_MD_get_size(s.md)));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(seed + i * 7);
  return out;
}

bytes text(std::string_view t) {
  return {t.begin(), t.end()};
}

bytes opened(record_protection& p, const bytes& wire, boost::system::error_code* ec = nullptr) {
  byte_buffer plain;
  std::size_t used = 0;
  const auto e = p.open(wire, plain, used);
  if (ec)
    *ec = e;
  else
    EXPECT_FALSE(e) << e.message();
  return {plain.data(), plain.data() + plain.size()};
}

const bytes key_update_requested = {24, 0, 0, 1, 1}, key_update_not_requested = {24, 0, 0, 1, 0};

TEST(TrafficRecords, OursGoOnFromOpenSslsLastRecordUnderTheSessionsKeys) {
  for (const auto& s : suites) {
    reference_keys send{s, secret_of(s, 1)}, receive{s, secret_of(s, 2)};
    auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 2);
    byte_buffer wire;
    const bytes hello = text("hello after two tickets");
    ASSERT_FALSE(p->seal(hello, wire));
    const bytes expected = send.record(2, hello);
    EXPECT_EQ(bytes(wire.data(), wire.data() + wire.size()), expected);
    // The peer's first record is its first under its secret.
    EXPECT_EQ(opened(*p, receive.record(0, text("request"))), text("request"));
    EXPECT_EQ(opened(*p, receive.record(1, text("next"))), text("next"));
  }
}

TEST(TrafficRecords, PaddingIsTakenOffAndAllPaddingIsAnError) {
  for (const auto& s : suites) {
    reference_keys send{s, secret_of(s, 3)}, receive{s, secret_of(s, 4)};
    auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 0);
    EXPECT_EQ(opened(*p, receive.record(0, text("padded"), 23, 100)), text("padded"));
    // Data, type and padding up to the most TLS 1.3 allows in one record (2^14 + 1).
    const bytes most(16000, 0x5a);
    EXPECT_EQ(opened(*p, receive.record(1, most, 23, 384)), most);
    // Into a span with room for the data alone, as a reader of full records has.
    const bytes wire = receive.record(2, text("into a span"), 23, 40);
    std::vector<std::uint8_t> out(11 + 40);
    std::size_t used = 0, produced = 0;
    ASSERT_FALSE(p->open(wire, out, used, produced));
    EXPECT_EQ(bytes(out.begin(), out.begin() + produced), text("into a span"));
    boost::system::error_code ec;
    opened(*p, receive.record(3, {}, 0, 20), &ec);  // no type at all: zeros throughout
    EXPECT_EQ(ec, record_error::bad_content_type);
  }
}

TEST(TrafficRecords, ThePeersKeyUpdateMovesReceivingAndAsksForOursWhenItSaysSo) {
  for (const auto& s : suites) {
    reference_keys send{s, secret_of(s, 5)}, receive{s, secret_of(s, 6)};
    auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 0);
    EXPECT_EQ(opened(*p, receive.record(0, key_update_not_requested, 22)), bytes{});
    EXPECT_FALSE(p->key_update_owed());
    receive.update();
    EXPECT_EQ(opened(*p, receive.record(0, text("under the next key"))),
              text("under the next key"));
    EXPECT_EQ(p->receive_generation(), 1u);
    // With update_requested, ours goes before our next data: a KeyUpdate under the old key that
    // asks for nothing, then the data under the next.
    EXPECT_EQ(opened(*p, receive.record(1, key_update_requested, 22)), bytes{});
    EXPECT_TRUE(p->key_update_owed());
    receive.update();
    byte_buffer wire;
    ASSERT_FALSE(p->seal(text("answer"), wire));
    bytes expected = send.record(0, key_update_not_requested, 22);
    send.update();
    const bytes data = send.record(0, text("answer"));
    expected.insert(expected.end(), data.begin(), data.end());
    EXPECT_EQ(bytes(wire.data(), wire.data() + wire.size()), expected);
    EXPECT_FALSE(p->key_update_owed());
    EXPECT_EQ(p->send_generation(), 1u);
    // A record under the old key fails now.
    boost::system::error_code ec;
    opened(*p, reference_keys{s, secret_of(s, 6)}.record(2, text("old key")), &ec);
    EXPECT_EQ(ec, record_error::authentication_failed);
  }
}

TEST(TrafficRecords, OursMovesOnAfterRecordsPerKey) {
  const auto& s = suites[0];
  reference_keys send{s, secret_of(s, 7)}, receive{s, secret_of(s, 8)};
  auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 1, 3);
  byte_buffer wire;
  for (const char* t : {"one", "two", "three"}) ASSERT_FALSE(p->seal(text(t), wire));
  bytes expected = send.record(1, text("one"));
  for (const auto& r : {send.record(2, text("two")), send.record(3, key_update_not_requested, 22)})
    expected.insert(expected.end(), r.begin(), r.end());
  send.update();
  const bytes three = send.record(0, text("three"));
  expected.insert(expected.end(), three.begin(), three.end());
  EXPECT_EQ(bytes(wire.data(), wire.data() + wire.size()), expected);
  EXPECT_EQ(p->send_generation(), 1u);
  EXPECT_EQ(p->sent_in_key(), 1u);
}

TEST(TrafficRecords, AClientMaySendNoOtherHandshakeMessageNorOversizedData) {
  const auto& s = suites[0];
  const bytes not_key_updates[] = {
      {4, 0, 0, 1, 0},                   // a NewSessionTicket's type
      {24, 0, 0, 1, 2},                  // a KeyUpdate asking for neither
      {24, 0, 0, 2, 0, 0},               // a KeyUpdate of the wrong length
      {24, 0, 0, 1},                     // cut short
      {24, 0, 0, 1, 0, 24, 0, 0, 1, 0},  // two in one record: the second would be under the old key
  };
  for (const auto& m : not_key_updates) {
    reference_keys send{s, secret_of(s, 9)}, receive{s, secret_of(s, 10)};
    auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 0);
    boost::system::error_code ec;
    opened(*p, receive.record(0, m, 22), &ec);
    EXPECT_EQ(ec, record_error::unexpected_message) << int(m[0]) << " " << m.size();
    EXPECT_EQ(alert_for(ec), record_alert::unexpected_message);
  }
  reference_keys send{s, secret_of(s, 9)}, receive{s, secret_of(s, 10)};
  auto p = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 0);
  boost::system::error_code ec;
  opened(*p, receive.record(0, bytes(16385, 1)), &ec);
  EXPECT_EQ(ec, record_error::record_overflow);
  auto padded = record_protection::from_traffic_secrets(s.cipher, send.secret, receive.secret, 0);
  opened(*padded, receive.record(0, bytes(16000, 1), 23, 385), &ec);  // padding counts too
  EXPECT_EQ(ec, record_error::record_overflow);
  EXPECT_EQ(alert_for(ec), record_alert::record_overflow);
  // The link's records take no handshake messages at all: their keys move by count.
  auto exporter = [](std::string_view, std::span<std::uint8_t> out) {
    std::fill(out.begin(), out.end(), std::uint8_t{3});
    return true;
  };
  record_protection link_side(s.cipher, exporter, false);
  bytes material(16 + 12, 3);
  const bytes update = test::tls13_record(s.evp, {material.data(), 16}, {material.data() + 16, 12},
                                          0, key_update_not_requested, 22);
  opened(link_side, update, &ec);
  EXPECT_EQ(ec, record_error::bad_content_type);
}

}  // namespace traffic_records_test
}  // namespace burrow::link
