// PROXY protocol: exact v1/v2 bytes, round trips for v4, v6 and mixed, truncation and garbage.
#include "proto/proxy_protocol.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace burrow::proto {
namespace {

namespace ip = boost::asio::ip;

ip::tcp::endpoint ep(const char* addr, std::uint16_t port) {
  return {ip::make_address(addr), port};
}

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

const std::string v2_sig("\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A", 12);

TEST(ProxyProtocol, ParsesVersionNames) {
  EXPECT_EQ(parse_proxy_version("none"), proxy_version::none);
  EXPECT_EQ(parse_proxy_version("v1"), proxy_version::v1);
  EXPECT_EQ(parse_proxy_version("1"), proxy_version::v1);
  EXPECT_EQ(parse_proxy_version("v2"), proxy_version::v2);
  EXPECT_EQ(parse_proxy_version("2"), proxy_version::v2);
  EXPECT_FALSE(parse_proxy_version("v3"));
  EXPECT_FALSE(parse_proxy_version(""));
}

TEST(ProxyProtocol, V1ExactBytes) {
  EXPECT_EQ(proxy_header(proxy_version::v1, ep("192.168.0.1", 56324), ep("192.168.0.11", 443)),
            "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n");
  EXPECT_EQ(proxy_header(proxy_version::v1, ep("2001:db8::1", 1), ep("::1", 65535)),
            "PROXY TCP6 2001:db8::1 ::1 1 65535\r\n");
  EXPECT_EQ(proxy_header(proxy_version::v1, ep("10.0.0.1", 5), ep("::1", 6)),
            "PROXY TCP6 ::ffff:10.0.0.1 ::1 5 6\r\n");
  EXPECT_EQ(proxy_header(proxy_version::none, ep("10.0.0.1", 5), ep("10.0.0.2", 6)), "");
}

TEST(ProxyProtocol, V2ExactBytes) {
  const auto h = proxy_header(proxy_version::v2, ep("1.2.3.4", 0x1122), ep("5.6.7.8", 0x3344));
  const std::string want = v2_sig + std::string("\x21\x11\x00\x0C", 4) +
                           "\x01\x02\x03\x04\x05\x06\x07\x08\x11\x22\x33\x44";
  EXPECT_EQ(h, want);
  const auto h6 = proxy_header(proxy_version::v2, ep("::1", 1), ep("1.2.3.4", 2));
  ASSERT_EQ(h6.size(), 16u + 36u);
  EXPECT_EQ(h6.substr(12, 4), std::string("\x21\x21\x00\x24", 4));
  EXPECT_EQ(h6.substr(16 + 16, 16),
            std::string("\0\0\0\0\0\0\0\0\0\0\xff\xff\x01\x02\x03\x04", 16));
}

struct round_trip_case {
  const char* src;
  const char* dst;
  bool mapped;  // families differ: the v4 side comes back v4-mapped
};

TEST(ProxyProtocol, RoundTripsBothVersions) {
  for (auto v : {proxy_version::v1, proxy_version::v2}) {
    for (auto c : {round_trip_case{"192.0.2.1", "198.51.100.7", false},
                   round_trip_case{"0.0.0.0", "255.255.255.255", false},
                   round_trip_case{"2001:db8::42", "fe80::1", false},
                   round_trip_case{"203.0.113.9", "2001:db8::1", true},
                   round_trip_case{"::1", "127.0.0.1", true}}) {
      const auto s = ep(c.src, 40000), d = ep(c.dst, 8443);
      auto h = proxy_header(v, s, d);
      h += "visitor bytes";
      proxy_info info;
      ASSERT_EQ(parse_proxy_header(bytes(h), info), proxy_parse::ok) << c.src;
      EXPECT_EQ(info.header_length, h.size() - 13);
      EXPECT_EQ(info.source.port(), 40000);
      EXPECT_EQ(info.destination.port(), 8443);
      if (!c.mapped) {
        EXPECT_EQ(info.source.address(), s.address());
        EXPECT_EQ(info.destination.address(), d.address());
      } else {
        const auto back = [](const ip::address& a) {
          return a.to_v6().is_v4_mapped()
                     ? ip::address(ip::make_address_v4(ip::v4_mapped, a.to_v6()))
                     : a;
        };
        EXPECT_TRUE(info.source.address().is_v6());
        EXPECT_EQ(back(info.source.address()), s.address());
        EXPECT_EQ(back(info.destination.address()), d.address());
      }
    }
  }
}

TEST(ProxyProtocol, EveryTruncationIsIncomplete) {
  for (auto v : {proxy_version::v1, proxy_version::v2}) {
    for (auto [s, d] : {std::pair{"10.1.2.3", "10.3.2.1"}, std::pair{"2001:db8::5", "::1"}}) {
      const auto h = proxy_header(v, ep(s, 1234), ep(d, 80));
      for (std::size_t n = 0; n < h.size(); ++n) {
        proxy_info info;
        EXPECT_EQ(parse_proxy_header(bytes(h.substr(0, n)), info), proxy_parse::incomplete)
            << static_cast<int>(v) << " " << n;
      }
    }
  }
}

TEST(ProxyProtocol, V1Unknown) {
  for (std::string h : {"PROXY UNKNOWN\r\n", "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"}) {
    proxy_info info;
    ASSERT_EQ(parse_proxy_header(bytes(h), info), proxy_parse::ok) << h;
    EXPECT_EQ(info.header_length, h.size());
    EXPECT_EQ(info.source, ip::tcp::endpoint{});
  }
}

TEST(ProxyProtocol, V1RejectsGarbage) {
  for (std::string bad :
       {"GET / HTTP/1.1\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
        "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", "PROXY TCP4 ::1 ::2 1 2\r\n",
        "PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",
        "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX", "PROXY \r\n", "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 1.2.3.4\x01 5\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",
        "\x16\x03\x01\x02\x00"}) {
    proxy_info info;
    EXPECT_EQ(parse_proxy_header(bytes(bad), info), proxy_parse::invalid) << bad;
  }
  // No CRLF within the 107 bytes the spec allows.
  proxy_info info;
  EXPECT_EQ(parse_proxy_header(bytes("PROXY UNKNOWN " + std::string(100, 'x')), info),
            proxy_parse::invalid);
  EXPECT_EQ(parse_proxy_header(bytes("PROXY UNKNOWN " + std::string(91, 'x')), info),
            proxy_parse::incomplete);  // 105 bytes: a CRLF may still come
  EXPECT_EQ(parse_proxy_header(bytes("PROXY UNKNOWN " + std::string(91, 'x') + "\r\n"), info),
            proxy_parse::ok);  // 107 bytes exactly
  EXPECT_EQ(parse_proxy_header(bytes("PROXY UNKNOWN " + std::string(92, 'x') + "\r\n"), info),
            proxy_parse::invalid);  // 108 bytes
}

std::string v2(std::uint8_t ver_cmd, std::uint8_t fam, const std::string& body) {
  std::string h = v2_sig;
  h += static_cast<char>(ver_cmd);
  h += static_cast<char>(fam);
  h += static_cast<char>(body.size() >> 8);
  h += static_cast<char>(body.size() & 0xFF);
  return h + body;
}

TEST(ProxyProtocol, V2LocalUnspecTlvsAndOtherFamilies) {
  proxy_info info;
  auto local = v2(0x20, 0x00, "");
  ASSERT_EQ(parse_proxy_header(bytes(local), info), proxy_parse::ok);
  EXPECT_EQ(info.header_length, 16u);
  EXPECT_EQ(info.source, ip::tcp::endpoint{});

  // LOCAL ignores whatever address block it carries.
  ASSERT_EQ(parse_proxy_header(bytes(v2(0x20, 0x11, "abc")), info), proxy_parse::ok);
  EXPECT_EQ(info.header_length, 19u);

  // PROXY over TCP4 followed by a TLV (PP2_TYPE_AUTHORITY "a.b"), which is skipped.
  const std::string addrs("\x01\x02\x03\x04\x05\x06\x07\x08\x00\x50\x01\xBB", 12);
  const std::string tlv(
      "\x02\x00\x03"
      "a.b",
      6);
  auto with_tlv = v2(0x21, 0x11, addrs + tlv) + "GET";
  ASSERT_EQ(parse_proxy_header(bytes(with_tlv), info), proxy_parse::ok);
  EXPECT_EQ(info.header_length, 16u + 18u);
  EXPECT_EQ(info.source, ep("1.2.3.4", 80));
  EXPECT_EQ(info.destination, ep("5.6.7.8", 443));

  // UNSPEC, UDP and UNIX are accepted without TCP endpoints.
  EXPECT_EQ(parse_proxy_header(bytes(v2(0x21, 0x00, "")), info), proxy_parse::ok);
  EXPECT_EQ(parse_proxy_header(bytes(v2(0x21, 0x12, addrs)), info), proxy_parse::ok);
  EXPECT_EQ(info.source, ip::tcp::endpoint{});
  EXPECT_EQ(parse_proxy_header(bytes(v2(0x21, 0x31, std::string(216, '\0'))), info),
            proxy_parse::ok);
}

TEST(ProxyProtocol, V2RejectsGarbage) {
  const std::string addrs(12, '\x01');
  proxy_info info;
  for (std::string bad : {v2(0x11, 0x11, addrs),                   // version 1 in a v2 header
                          v2(0x22, 0x11, addrs),                   // command 2
                          v2(0x21, 0x41, addrs),                   // family 4
                          v2(0x21, 0x13, addrs),                   // transport 3
                          v2(0x21, 0x10, addrs),                   // INET with UNSPEC transport
                          v2(0x21, 0x01, addrs),                   // UNSPEC family with STREAM
                          v2(0x21, 0x11, addrs.substr(0, 11)),     // address block too short
                          v2(0x21, 0x21, std::string(35, '\0')),   // IPv6 block too short
                          v2(0x21, 0x31, std::string(215, '\0')),  // UNIX block too short
                          v2(0x21, 0x11, std::string(537, '\0')),  // over the length bound
                          std::string("\x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0B", 12),
                          std::string("\x0D\x0A\x0D\x0B", 4)}) {
    EXPECT_EQ(parse_proxy_header(bytes(bad), info), proxy_parse::invalid);
  }
  // The length bound is checked before waiting for the body.
  auto huge = v2(0x21, 0x11, "");
  huge[14] = '\xFF';
  EXPECT_EQ(parse_proxy_header(bytes(huge), info), proxy_parse::invalid);
  EXPECT_EQ(parse_proxy_header(bytes(v2(0x21, 0x11, std::string(536, '\0'))), info),
            proxy_parse::ok);
}

TEST(ProxyProtocol, EmptyInputIsIncomplete) {
  proxy_info info;
  EXPECT_EQ(parse_proxy_header({}, info), proxy_parse::incomplete);
}

}  // namespace
}  // namespace burrow::proto
