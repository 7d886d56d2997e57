// host:port and port range parsing and formatting.
#include "core/address.hpp"

#include <gtest/gtest.h>

#include <string>

namespace burrow {
namespace {

void expect_hp(std::string_view text, std::optional<std::uint16_t> def, std::string_view host,
               std::uint16_t port) {
  auto hp = parse_host_port(text, def);
  ASSERT_TRUE(hp.has_value()) << text;
  EXPECT_EQ(hp->host, host) << text;
  EXPECT_EQ(hp->port, port) << text;
}

TEST(Address, ParsesHostPortForms) {
  expect_hp("example.com:443", std::nullopt, "example.com", 443);
  expect_hp("1.2.3.4:80", std::nullopt, "1.2.3.4", 80);
  expect_hp("[::1]:8080", std::nullopt, "::1", 8080);
  expect_hp("[fe80::1%eth0]:22", std::nullopt, "fe80::1%eth0", 22);
  expect_hp("[::1]", 7000, "::1", 7000);
  expect_hp("localhost", 7000, "localhost", 7000);
  expect_hp(":9000", std::nullopt, "", 9000);
  expect_hp(":0", std::nullopt, "", 0);
  expect_hp("h:65535", std::nullopt, "h", 65535);
  expect_hp("my_host-1.local:1", 5, "my_host-1.local", 1);
}

TEST(Address, RejectsBadHostPort) {
  for (const char* bad : {"",           ":",         "host",         "[::1]",       "host:",
                          "host:65536", "host:-1",   "host:8o",      "host:+80",    "host:123456",
                          "::1:80",     "::1",       "[::1",         "::1]:80",     "[::1]80",
                          "[::1]:",     "[]:80",     "[1.2.3.4]:80", "[::1]:80:80", "[[::1]]:80",
                          "ho st:80",   "host/x:80", "a@b:80",       "[::g]:80",    "[::1%]:80"}) {
    EXPECT_FALSE(parse_host_port(bad).has_value()) << bad;
  }
  EXPECT_FALSE(parse_host_port("", 80).has_value());
  EXPECT_FALSE(parse_host_port(":", 80).has_value());
  EXPECT_FALSE(parse_host_port("::1", 80).has_value());
  EXPECT_FALSE(
      parse_host_port(std::string(297, 'a') + ":80").has_value());  // 300 chars, host too long
  EXPECT_FALSE(parse_host_port(std::string(301, 'a'), 80).has_value());
  EXPECT_FALSE(parse_host_port(std::string("h\0st:80", 7)).has_value());
}

TEST(Address, FormatsAndRoundTrips) {
  EXPECT_EQ(format_host_port("::1", 80), "[::1]:80");
  EXPECT_EQ(format_host_port("1.2.3.4", 80), "1.2.3.4:80");
  EXPECT_EQ(format_host_port("example.com", 0), "example.com:0");
  EXPECT_EQ(format_host_port("", 9000), ":9000");
  EXPECT_EQ(format_host_port("[::1]", 80), "[::1]:80");
  for (const char* h : {"::1", "10.0.0.1", "relay.example", "", "fe80::1%eth0"}) {
    auto hp = parse_host_port(format_host_port(h, 4242));
    ASSERT_TRUE(hp) << h;
    EXPECT_EQ(hp->host, h);
    EXPECT_EQ(hp->port, 4242);
  }
}

TEST(Address, WritesAddressesAsAsioDoesAndMappedOnesAsIpv4) {
  namespace ip = boost::asio::ip;
  for (const char* text :
       {"0.0.0.0", "127.0.0.1", "10.20.30.40", "192.168.1.255", "255.255.255.255", "1.0.0.9", "::1",
        "::", "2001:db8::8a2e:370:7334", "fe80::1", "2001:db8:0:0:1:0:0:1"}) {
    auto a = ip::make_address(text);
    EXPECT_EQ(address_text(a), a.to_string()) << text;
  }
  EXPECT_EQ(address_text(ip::make_address("::ffff:192.0.2.128")), "192.0.2.128");
  EXPECT_EQ(address_text(ip::make_address("::ffff:0.0.0.0")), "0.0.0.0");
  EXPECT_EQ(address_text(ip::make_address("::ffff:255.255.255.255")), "255.255.255.255");
  // Scoped IPv6 addresses keep their scope, as to_string() writes it.
  auto scoped = ip::make_address_v6("fe80::1");
  scoped.scope_id(7);
  EXPECT_EQ(address_text(ip::address(scoped)), ip::address(scoped).to_string());
}

TEST(Address, UnmapsOnlyIpv4MappedAddresses) {
  namespace ip = boost::asio::ip;
  EXPECT_EQ(unmapped(ip::make_address("::ffff:192.0.2.128")), ip::make_address("192.0.2.128"));
  EXPECT_TRUE(unmapped(ip::make_address("::ffff:10.0.0.1")).is_v4());
  for (const char* kept : {"192.0.2.128", "::1", "::", "2001:db8::1", "::192.0.2.128",
                           "64:ff9b::c000:280"})  // IPv4-compatible and NAT64 stay IPv6
    EXPECT_EQ(unmapped(ip::make_address(kept)), ip::make_address(kept)) << kept;
}

TEST(Address, ParsesPortRanges) {
  auto any = parse_port_range("0");
  ASSERT_TRUE(any);
  EXPECT_TRUE(any->any());
  auto one = parse_port_range("8080");
  ASSERT_TRUE(one);
  EXPECT_FALSE(one->any());
  EXPECT_EQ(one->first, 8080);
  EXPECT_EQ(one->last, 8080);
  EXPECT_TRUE(one->contains(8080));
  EXPECT_FALSE(one->contains(8081));
  auto r = parse_port_range("20000-29999");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 20000);
  EXPECT_EQ(r->last, 29999);
  EXPECT_TRUE(r->contains(20000));
  EXPECT_TRUE(r->contains(29999));
  EXPECT_FALSE(r->contains(19999));
  EXPECT_FALSE(r->contains(30000));
  EXPECT_TRUE(parse_port_range("1-65535"));
  EXPECT_TRUE(parse_port_range("5-5"));
}

TEST(Address, RejectsBadPortRanges) {
  for (const char* bad : {"", "-", "1-", "-1", "0-10", "10-0", "30000-20000", "1-65536", "70000",
                          "a", "1 - 2", "1--2", "1-2-3", "+1", "123456789012"}) {
    EXPECT_FALSE(parse_port_range(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace burrow
