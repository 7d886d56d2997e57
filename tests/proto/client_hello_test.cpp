// ClientHello peek: a real OpenSSL hello whole, cut short and re-fragmented; built hellos for
// names, ALPN, versions and every length that can disagree with its parent; the HTTP/TLS sniff.
#include "proto/client_hello.hpp"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace burrow::proto {
namespace {

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

client_hello_result parse(const std::string& s, std::size_t max = default_max_client_hello) {
  return parse_client_hello(bytes(s), max);
}

std::string u8(std::size_t v) {
  return std::string(1, static_cast<char>(v & 0xFF));
}
std::string u16(std::size_t v) {
  return u8(v >> 8) + u8(v);
}
std::string u24(std::size_t v) {
  return u8(v >> 16) + u16(v);
}

// --- A small builder: extensions, the body, the handshake message, records. ---

std::string ext(std::uint16_t type, const std::string& data) {
  return u16(type) + u16(data.size()) + data;
}
std::string sni_list(const std::string& entries) {
  return u16(entries.size()) + entries;
}
std::string host_entry(const std::string& name) {
  return u8(0) + u16(name.size()) + name;
}
std::string sni_ext(const std::string& name) {
  return ext(0, sni_list(host_entry(name)));
}
std::string alpn_ext(const std::vector<std::string>& protos) {
  std::string list;
  for (const auto& p : protos) list += u8(p.size()) + p;
  return ext(16, u16(list.size()) + list);
}
std::string versions_ext(const std::vector<std::uint16_t>& versions) {
  std::string list;
  for (auto v : versions) list += u16(v);
  return ext(43, u8(list.size()) + list);
}

struct body_parts {
  std::string version = u16(0x0303);
  std::string random = std::string(32, '\x5a');
  std::string session_id = u8(32) + std::string(32, '\x11');
  std::string suites = u16(4) + "\x13\x01\x13\x02";
  std::string compression = u8(1) + u8(0);
  std::optional<std::string> extensions = "";  // nullopt: no extensions block at all
  std::string extensions_block() const {
    return extensions ? u16(extensions->size()) + *extensions : "";
  }
  std::string str() const {
    return version + random + session_id + suites + compression + extensions_block();
  }
};

std::string handshake(const std::string& body, std::uint8_t type = 1) {
  return u8(type) + u24(body.size()) + body;
}

std::string records(const std::string& message, std::size_t chunk = tls_max_record_payload,
                    std::uint16_t version = 0x0301, std::uint8_t type = 22) {
  std::string out;
  for (std::size_t at = 0; at < message.size(); at += chunk) {
    const auto part = message.substr(at, chunk);
    out += u8(type) + u16(version) + u16(part.size()) + part;
  }
  return out;
}

std::string body_with(const std::string& extensions) {
  body_parts b;
  b.extensions = extensions;
  return b.str();
}

std::string hello_with(const std::string& extensions) {
  return records(handshake(body_with(extensions)));
}

// The handshake message inside well-formed records, for re-fragmenting.
std::string unwrap(const std::string& recs) {
  std::string out;
  for (std::size_t at = 0; at + 5 <= recs.size();) {
    const std::size_t n = (std::uint8_t(recs[at + 3]) << 8) | std::uint8_t(recs[at + 4]);
    out += recs.substr(at + 5, n);
    at += 5 + n;
  }
  return out;
}

// --- A real ClientHello: what OpenSSL writes first, taken from a memory BIO. ---

struct ssl_free {
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

std::string openssl_hello(const char* sni, int max_version = 0) {
  std::unique_ptr<SSL_CTX, ssl_free> ctx(SSL_CTX_new(TLS_client_method()));
  if (max_version) SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  std::unique_ptr<SSL, ssl_free> ssl(SSL_new(ctx.get()));
  SSL_set_bio(ssl.get(), BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));  // ssl owns both
  SSL_set_connect_state(ssl.get());
  if (sni) {
    EXPECT_EQ(SSL_set_tlsext_host_name(ssl.get(), sni), 1);
  }
  static const unsigned char protos[] = "\x02h2\x08http/1.1";
  EXPECT_EQ(SSL_set_alpn_protos(ssl.get(), protos, sizeof protos - 1), 0);  // 0 is success
  EXPECT_EQ(SSL_do_handshake(ssl.get()), -1);
  EXPECT_EQ(SSL_get_error(ssl.get(), -1), SSL_ERROR_WANT_READ);
  char* data = nullptr;
  const long n = BIO_get_mem_data(SSL_get_wbio(ssl.get()), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

void expect_same(const client_hello_result& a, const client_hello_result& b) {
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.server_name, b.server_name);
  EXPECT_EQ(a.alpn, b.alpn);
  EXPECT_EQ(a.legacy_version, b.legacy_version);
  EXPECT_EQ(a.offers_tls13, b.offers_tls13);
}

TEST(ClientHello, ParsesARealOpenSslHello) {
  const auto h = openssl_hello("share.example.net");
  ASSERT_GT(h.size(), 100u);
  const auto r = parse(h);
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.server_name, "share.example.net");
  EXPECT_EQ(r.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
  EXPECT_EQ(r.consumed, h.size());
  EXPECT_EQ(r.record_version, 0x0301);
  EXPECT_EQ(r.legacy_version, 0x0303);
  EXPECT_TRUE(r.offers_tls13);
}

TEST(ClientHello, ParsesARealTls12Hello) {
  const auto r = parse(openssl_hello("old.example", TLS1_2_VERSION));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.server_name, "old.example");
  EXPECT_FALSE(r.offers_tls13);
  EXPECT_EQ(r.legacy_version, 0x0303);
}

TEST(ClientHello, EveryPrefixOfARealHelloIsIncomplete) {
  const auto h = openssl_hello("share.example.net");
  for (std::size_t n = 0; n < h.size(); ++n) {
    const auto r = parse(h.substr(0, n));
    ASSERT_EQ(r.status, hello_parse::incomplete) << n << ": " << r.reason;
    EXPECT_GE(r.need, 1u);
    EXPECT_LE(n + r.need, h.size()) << n;  // never asks for more than the hello holds
  }
  // The record header tells the exact rest once it is in.
  EXPECT_EQ(parse(h.substr(0, 5)).need, h.size() - 5);
}

TEST(ClientHello, RefragmentedRealHelloParsesTheSame) {
  const auto h = openssl_hello("share.example.net");
  const auto whole = parse(h);
  const auto message = unwrap(h);
  for (std::size_t chunk : {1, 2, 7, 100, 16384}) {
    const auto split = records(message, chunk);
    const auto r = parse(split);
    ASSERT_EQ(r.status, hello_parse::ok) << chunk << ": " << r.reason;
    expect_same(r, whole);
    EXPECT_EQ(r.consumed, split.size());
    // Cut short anywhere, including inside record headers, it waits for more.
    for (std::size_t n = 0; n < split.size(); n += 1 + n / 8) {
      const auto part = parse(split.substr(0, n));
      ASSERT_EQ(part.status, hello_parse::incomplete) << chunk << " " << n;
      EXPECT_LE(n + part.need, split.size()) << chunk << " " << n;
    }
  }
}

TEST(ClientHello, StopsAtTheEndOfTheHelloRecords) {
  const auto h = records(unwrap(openssl_hello("a.example")), 50);
  // What a TLS 1.3 client may send next: change_cipher_spec, then early data.
  const auto next = std::string("\x14\x03\x03\x00\x01\x01\x17\x03\x03\x00\x02xy", 13);
  const auto r = parse(h + next);
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.consumed, h.size());
  EXPECT_EQ(r.server_name, "a.example");
}

TEST(ClientHello, NoSniAndNoExtensions) {
  const auto real = parse(openssl_hello(nullptr));
  ASSERT_EQ(real.status, hello_parse::ok) << real.reason;
  EXPECT_EQ(real.server_name, "");
  EXPECT_EQ(real.alpn.size(), 2u);

  body_parts b;
  b.version = u16(0x0301);
  b.extensions.reset();  // a TLS 1.0 hello may end after the compression methods
  const auto bare = parse(records(handshake(b.str())));
  ASSERT_EQ(bare.status, hello_parse::ok) << bare.reason;
  EXPECT_EQ(bare.server_name, "");
  EXPECT_TRUE(bare.alpn.empty());
  EXPECT_FALSE(bare.offers_tls13);
  EXPECT_EQ(bare.legacy_version, 0x0301);

  const auto empty_block = parse(hello_with(""));
  EXPECT_EQ(empty_block.status, hello_parse::ok) << empty_block.reason;
}

TEST(ClientHello, LowercasesTheNameAndDropsATrailingDot) {
  auto r = parse(hello_with(sni_ext("WWW.Example.COM")));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.server_name, "www.example.com");
  r = parse(hello_with(sni_ext("xn--bcher-kva.example.")));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.server_name, "xn--bcher-kva.example");
}

TEST(ClientHello, RejectsNamesThatAreNotDnsNames) {
  const std::string label63(63, 'a');
  const std::string long254 = label63 + "." + label63 + "." + label63 + "." + std::string(62, 'b');
  for (std::string bad : {std::string(),
                          std::string("."),
                          std::string("a..b"),
                          std::string(".a"),
                          std::string("a.b.."),
                          std::string("127.0.0.1"),
                          std::string("10.1"),
                          std::string("0x7f000001"),
                          std::string("host.0x1F"),
                          std::string("::1"),
                          std::string("[::1]"),
                          std::string("under_score.example"),
                          std::string("sp ace.example"),
                          std::string("-lead.example"),
                          std::string("trail-.example"),
                          std::string("a.-b"),
                          std::string("nul\0.example", 12),
                          std::string("caf\xc3\xa9.example"),
                          std::string("a.b/c"),
                          std::string("a:443"),
                          label63 + "a.example",
                          long254,
                          long254 + "."}) {
    const auto r = parse(hello_with(sni_ext(bad)));
    EXPECT_EQ(r.status, hello_parse::invalid) << bad;
    EXPECT_EQ(r.error, hello_error::bad_server_name) << bad << ": " << r.reason;
    EXPECT_FALSE(canonical_host_name(bad)) << bad;
  }
  // The longest names that pass: 253 characters, 63-character labels.
  const std::string long253 = long254.substr(1);
  for (std::string good :
       {long253, long253 + ".", label63 + ".example", std::string("a"), std::string("1.example"),
        std::string("example.0a"), std::string("a-b.c-d"), std::string("123abc")}) {
    const auto r = parse(hello_with(sni_ext(good)));
    EXPECT_EQ(r.status, hello_parse::ok) << good << ": " << r.reason;
    EXPECT_TRUE(canonical_host_name(good)) << good;
  }
}

TEST(ClientHello, ReasonNeverQuotesTheInput) {
  const auto r = parse(hello_with(sni_ext("evil\x1b[31m.example")));
  ASSERT_EQ(r.status, hello_parse::invalid);
  EXPECT_EQ(r.reason.find("evil"), std::string::npos);
  EXPECT_EQ(to_string(r.error), "bad_server_name");
}

TEST(ClientHello, SniListHoldsExactlyOneHostName) {
  const auto two = ext(0, sni_list(host_entry("a.example") + host_entry("b.example")));
  const auto other_type = ext(0, sni_list(u8(1) + u16(9) + "a.example"));
  const auto empty_list = ext(0, sni_list(""));
  const auto empty_ext = ext(0, "");
  for (const auto& e : {two, other_type, empty_list, empty_ext}) {
    const auto r = parse(hello_with(e));
    EXPECT_EQ(r.status, hello_parse::invalid);
    EXPECT_EQ(r.error, hello_error::bad_server_name) << r.reason;
  }
}

TEST(ClientHello, RejectsDuplicateExtensions) {
  for (const auto& e : {sni_ext("a.example") + sni_ext("a.example"),
                        alpn_ext({"h2"}) + sni_ext("a.example") + alpn_ext({"h2"}),
                        ext(0xfafa, "") + ext(0xfafa, "x")}) {
    const auto r = parse(hello_with(e));
    EXPECT_EQ(r.status, hello_parse::invalid);
    EXPECT_EQ(r.error, hello_error::duplicate_extension) << r.reason;
  }
}

TEST(ClientHello, AlpnBounds) {
  std::vector<std::string> protos;
  for (int i = 0; i < 32; ++i)
    protos.push_back(std::to_string(i) + "p");  // "p" + s: GCC 12 -Wrestrict
  auto r = parse(hello_with(alpn_ext(protos)));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.alpn, protos);
  protos.push_back("one-too-many");
  r = parse(hello_with(alpn_ext(protos)));
  EXPECT_EQ(r.error, hello_error::bad_alpn) << r.reason;

  const std::string longest(255, 'x');
  r = parse(hello_with(alpn_ext({longest, std::string("\0\xff", 2)})));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(r.alpn, (std::vector<std::string>{longest, std::string("\0\xff", 2)}));

  for (const auto& e : {alpn_ext({"h2", ""}), ext(16, u16(0)), ext(16, "")}) {
    r = parse(hello_with(e));
    EXPECT_EQ(r.error, hello_error::bad_alpn) << r.reason;
  }
}

TEST(ClientHello, SupportedVersions) {
  auto r = parse(hello_with(versions_ext({0x7a7a, 0x0304, 0x0303})));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_TRUE(r.offers_tls13);
  r = parse(hello_with(versions_ext({0x0303, 0x0302})));
  ASSERT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_FALSE(r.offers_tls13);
  for (const auto& e : {versions_ext({}), ext(43, u8(3) + "\x03\x04\x03")}) {
    r = parse(hello_with(e));
    EXPECT_EQ(r.error, hello_error::bad_supported_versions) << r.reason;
  }
}

TEST(ClientHello, RejectsOversizedHellos) {
  body_parts b;
  b.extensions = ext(21, std::string(1000, '\0'));  // padding
  const auto body = b.str();
  auto r = parse(records(handshake(body)), body.size());
  EXPECT_EQ(r.status, hello_parse::ok) << r.reason;
  r = parse(records(handshake(body)), body.size() - 1);
  EXPECT_EQ(r.error, hello_error::too_large);
  EXPECT_EQ(r.reason, "ClientHello larger than " + std::to_string(body.size() - 1) + " bytes");
  // Decided from the handshake header alone, without waiting for the body.
  r = parse(records(handshake(body)).substr(0, 9), body.size() - 1);
  EXPECT_EQ(r.error, hello_error::too_large);
  // The default bound, and the largest length the header can state.
  r = parse(records(u8(1) + u24(default_max_client_hello + 1)));
  EXPECT_EQ(r.error, hello_error::too_large);
  r = parse(records(u8(1) + u24(0xFFFFFF)));
  EXPECT_EQ(r.error, hello_error::too_large);
  // A hello over the default that the caller allows, across two full-size records.
  b.extensions = ext(21, std::string(20000, '\0'));
  r = parse(records(handshake(b.str())), 32 * 1024);
  EXPECT_EQ(r.status, hello_parse::ok) << r.reason;
  EXPECT_EQ(parse(records(handshake(b.str()))).error, hello_error::too_large);
}

// legacy_record_version means nothing (RFC 8446, section 5.1): 0x0300 on the first record, as
// some clients write, or anything at all, on any record.
TEST(ClientHello, IgnoresTheRecordVersion) {
  const auto msg = unwrap(openssl_hello("a.example"));
  for (std::uint16_t version : {0x0300, 0x0301, 0x0303, 0x0305, 0x0201}) {
    const auto r = parse(records(msg, 16384, version));
    EXPECT_EQ(r.status, hello_parse::ok) << version << ": " << r.reason;
    EXPECT_EQ(r.server_name, "a.example");
    EXPECT_EQ(r.record_version, version);
    EXPECT_EQ(parse(records(msg, 50, version)).status, hello_parse::ok) << version;
  }
}

TEST(ClientHello, RejectsRecordsThatAreNotAClientHello) {
  const auto msg = unwrap(openssl_hello("a.example"));
  struct bad_case {
    std::string input;
    hello_error error;
  };
  const std::vector<bad_case> cases{
      {records(msg, 16384, 0x0303, 23), hello_error::not_handshake},  // application data
      {records(msg, 16384, 0x0303, 21), hello_error::not_handshake},  // alert
      {"\x15", hello_error::not_handshake},
      {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", hello_error::not_handshake},
      {std::string("\x80\x2e\x01\x03\x01", 5), hello_error::sslv2},  // SSLv2 CLIENT-HELLO
      {"\x80", hello_error::sslv2},
      {std::string("\x16\x03\x01\x00\x00", 5), hello_error::bad_record_length},
      {"\x16\x03\x01\x40\x01", hello_error::bad_record_length},  // 16385
      {records(handshake(std::string(40, 'x'), 2)), hello_error::not_client_hello},
      {std::string("\x16\x03\x01\x00\x01\x02", 6), hello_error::not_client_hello},  // 1-byte record
      {std::string("\x16\x03\x01\x00\x01\x00", 6), hello_error::not_client_hello},  // HelloRequest
      // A later record of another type, in the middle of a fragmented hello.
      {records(msg.substr(0, 10), 10) + records(msg.substr(10), 16384, 0x0303, 23),
       hello_error::not_handshake},
      {records(msg.substr(0, 10), 10) + std::string("\x16\x03\x01\x00\x00", 5),
       hello_error::bad_record_length},
  };
  for (const auto& c : cases) {
    const auto r = parse(c.input);
    EXPECT_EQ(r.status, hello_parse::invalid) << to_string(c.error);
    EXPECT_EQ(r.error, c.error) << r.reason;
    EXPECT_FALSE(r.reason.empty());
  }
}

// Each length field overstated or understated against the one that contains it. The reason
// names the field, which shows the check at that level is the one that fired.
TEST(ClientHello, RejectsLengthsThatDisagreeAtEachLevel) {
  struct bad_case {
    const char* what;
    hello_error error;
    const char* reason_names;
    std::string input;
  };
  const auto sni = sni_ext("a.example");
  const auto m = handshake(body_parts{}.str());
  const auto e = hello_error::bad_length;
  const auto f = hello_error::bad_field;
  const auto hello = [](body_parts b) { return records(handshake(b.str())); };
  const auto no_ext = [](body_parts b) {
    b.extensions.reset();
    return b;
  };
  const auto with_block = [&](const std::string& block) {
    return records(handshake(no_ext({}).str() + block));
  };
  const auto in_ext = [](const std::string& ext) { return records(handshake(body_with(ext))); };

  body_parts long_sid, short_sid, odd, none, suites_past, suites_cut, no_comp, comp_past;
  long_sid.session_id = u8(33) + std::string(33, '\0');
  short_sid = no_ext({});
  short_sid.session_id = u8(20);
  short_sid.suites = short_sid.compression = "";
  odd.suites = u16(3) + "abc";
  none.suites = u16(0);
  suites_past = no_ext({});
  suites_past.suites = u16(8) + "ab";
  suites_past.compression = "";
  suites_cut = no_ext({});
  suites_cut.suites = u8(0);
  suites_cut.compression = "";
  no_comp.compression = u8(0);
  comp_past = no_ext({});
  comp_past.compression = u8(3) + u8(0);

  const std::vector<bad_case> cases{
      {"record past message", e, "record", records(m + "x")},
      {"record past message, fragmented", e, "record",
       records(m.substr(0, 3), 3) + records(m.substr(3) + "x")},
      {"message below the fixed fields", e, "fixed fields",
       records(handshake(std::string(34, '\0')))},
      {"session id over 32", f, "session id", hello(long_sid)},
      {"session id past message", e, "session id", hello(short_sid)},
      {"odd suites", f, "cipher suite", hello(odd)},
      {"no suites", f, "cipher suite", hello(none)},
      {"suites past message", e, "cipher suites", hello(suites_past)},
      {"suites length cut", e, "cipher suites", hello(suites_cut)},
      {"no compression", f, "compression", hello(no_comp)},
      {"compression past message", e, "compression", hello(comp_past)},
      {"extensions length cut", e, "extensions", with_block(u8(0))},
      {"extensions past message", e, "extensions", with_block(u16(sni.size() + 1) + sni)},
      {"bytes after extensions", e, "after the extensions",
       with_block(u16(sni.size()) + sni + "x")},
      {"extension header past extensions", e, "extension header",
       with_block(u16(sni.size() + 2) + sni + u16(0))},
      {"extension past extensions", e, "extension runs",
       with_block(u16(sni.size() + 4) + sni + u16(99) + u16(1))},
      {"sni list over ext", e, "SNI list", in_ext(ext(0, u16(20) + host_entry("a.b")))},
      {"sni list under ext", e, "SNI list", in_ext(ext(0, u16(2) + host_entry("a.b")))},
      {"sni name past list", e, "SNI name", in_ext(ext(0, sni_list(u8(0) + u16(9) + "a.b")))},
      {"sni entry header cut", e, "SNI entry", in_ext(ext(0, sni_list(u8(0) + u8(1))))},
      {"alpn list over ext", e, "ALPN list", in_ext(ext(16, u16(9) + u8(2) + "h2"))},
      {"alpn name past list", e, "ALPN protocol name", in_ext(ext(16, u16(3) + u8(8) + "h2"))},
      {"versions list over ext", e, "supported_versions", in_ext(ext(43, u8(4) + u16(0x0304)))},
  };
  for (const auto& c : cases) {
    const auto r = parse(c.input);
    EXPECT_EQ(r.status, hello_parse::invalid) << c.what;
    EXPECT_EQ(r.error, c.error) << c.what << ": " << r.reason;
    EXPECT_NE(r.reason.find(c.reason_names), std::string::npos) << c.what << ": " << r.reason;
  }
  // A handshake length above what the records carry is a hello still arriving.
  const auto longer = m.substr(0, 1) + u24(m.size() + 10 - 4) + m.substr(4);
  EXPECT_EQ(parse(records(longer)).status, hello_parse::incomplete);
}

TEST(ClientHello, RejectsOldClientVersions) {
  for (std::uint16_t v : {0x0300, 0x0200, 0x0002, 0x0401}) {
    auto b = body_parts{};
    b.version = u16(v);
    const auto r = parse(records(handshake(b.str())));
    EXPECT_EQ(r.error, hello_error::bad_version) << v;
  }
}

TEST(ClientHello, GarbageIsNeverAcceptedOrReadPastItsEnd) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 300, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    if (i % 2) junk = std::string("\x16\x03\x01", 3) + junk;  // past the first checks
    const auto r = parse(junk);
    EXPECT_NE(r.status, hello_parse::ok);
  }
}

TEST(ClientHello, SniffsConnectionKind) {
  const auto kind = [](const std::string& s) { return sniff_connection(bytes(s)); };
  EXPECT_EQ(kind(""), connection_kind::incomplete);
  EXPECT_EQ(kind("\x16"), connection_kind::tls);
  EXPECT_EQ(kind(openssl_hello("a.example")), connection_kind::tls);
  EXPECT_EQ(kind("GET / HTTP/1.1\r\n"), connection_kind::http);
  EXPECT_EQ(kind("POST "), connection_kind::http);
  EXPECT_EQ(kind("PRI * HTTP/2.0\r\n"), connection_kind::http);
  EXPECT_EQ(kind("OPTIONS * HTTP/1.1"), connection_kind::http);
  EXPECT_EQ(kind("GE"), connection_kind::incomplete);
  EXPECT_EQ(kind("DELETE"), connection_kind::incomplete);
  EXPECT_EQ(kind(std::string(16, 'A')), connection_kind::incomplete);
  EXPECT_EQ(kind(std::string(17, 'A')), connection_kind::other);
  EXPECT_EQ(kind("get / HTTP/1.1"), connection_kind::other);
  EXPECT_EQ(kind(" GET"), connection_kind::other);
  EXPECT_EQ(kind("SSH-2.0-OpenSSH_9.2"), connection_kind::other);
  EXPECT_EQ(kind("\x80\x2e\x01"), connection_kind::other);
  EXPECT_EQ(kind(std::string("\0", 1)), connection_kind::other);
}

}  // namespace
}  // namespace burrow::proto
