// Access rules: each rule alone and combined, malformed Authorization headers, crypt hashes and
// their cache, IPv6 allow lists, spec errors that keep secrets out, refusal bytes as real HTTP.
#include "http/access_rules.hpp"

#include "core/secret.hpp"
#include "core/settings.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <crypt.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace burrow::http {
namespace {

namespace ip = boost::asio::ip;
namespace bhttp = boost::beast::http;
using verdict = access_rules::verdict;

ip::address addr(const char* text) {
  return ip::make_address(text);
}

const ip::address visitor = addr("203.0.113.5");

// Encodes with OpenSSL's encoder, independent of the decoder under test.
std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string basic(std::string_view user, std::string_view password) {
  return "Basic " + base64(std::string(user) + ":" + std::string(password));
}

bhttp::fields with_authorization(std::string_view value) {
  bhttp::fields f;
  f.set(bhttp::field::authorization, value);
  return f;
}

// The config_error message of f(); fails the test if f() does not throw one.
std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no config_error";
  return {};
}

// A fresh crypt hash of `password` with libxcrypt's own salt generator.
std::string make_hash(const char* prefix, unsigned long count, const char* password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn(prefix, count, nullptr, 0, setting, sizeof setting), nullptr);
  crypt_data data{};
  const char* out = crypt_r(password, setting, &data);
  EXPECT_TRUE(out != nullptr && out[0] != '*');
  return out != nullptr ? out : "";
}

std::string fmt_user(std::size_t i) {
  return "user" + std::to_string(i);
}

access_rules basic_rules(std::string_view spec) {
  access_rules rules;
  rules.add_basic(parse_basic_auth(spec));
  return rules;
}

TEST(AccessRules, EmptyRulesAllowEverything) {
  access_rules rules;
  EXPECT_TRUE(rules.empty());
  EXPECT_EQ(rules.check({}, visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization("garbage"), addr("::1")), verdict::allow);
  rules.add_allow_ip(parse_cidr("10.0.0.0/8"));
  EXPECT_FALSE(rules.empty());
}

// ---- Basic ----

TEST(AccessRulesBasic, AcceptsRightUserAndPassword) {
  auto rules = basic_rules("alice:s3cret-pw");
  EXPECT_FALSE(rules.empty());
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "s3cret-pw")), visitor), verdict::allow);
}

TEST(AccessRulesBasic, RefusesWrongOrMissingCredentials) {
  auto rules = basic_rules("alice:s3cret-pw");
  EXPECT_EQ(rules.check({}, visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "s3cret-pX")), visitor),
            verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "s3cret-pw2")), visitor),
            verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "s3cret-pw")), visitor),
            verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("Alice", "s3cret-pw")), visitor),
            verdict::need_basic);
}

TEST(AccessRulesBasic, SchemeIsCaseInsensitiveAndBlanksAreTolerated) {
  auto rules = basic_rules("alice:pw");
  auto creds = base64("alice:pw");
  for (std::string value : {"basic " + creds, "BASIC " + creds, "Basic   " + creds,
                            "Basic\t" + creds, " Basic " + creds + " "})
    EXPECT_EQ(rules.check(with_authorization(value), visitor), verdict::allow) << value;
}

TEST(AccessRulesBasic, SplitsAtTheFirstColon) {
  auto rules = basic_rules("alice:pa:ss");
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "pa:ss")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "pa")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "pa:ss:")), visitor),
            verdict::need_basic);
  EXPECT_EQ(parse_basic_auth("alice:pa:ss").user, "alice");
}

TEST(AccessRulesBasic, SeveralUsersEachWithTheirOwnPassword) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("alice:one"));
  rules.add_basic(parse_basic_auth("bob:two"));
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "one")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "two")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "two")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "one")), visitor), verdict::need_basic);
}

TEST(AccessRulesBasic, AcceptsBase64WithAndWithoutPadding) {
  // 9, 11 and 10 bytes: no, one and two padding characters.
  for (std::string pw : {"pw1", "pw123", "pw12"}) {
    auto rules = basic_rules("alice:" + pw);
    std::string creds = base64("alice:" + pw);
    EXPECT_EQ(rules.check(with_authorization("Basic " + creds), visitor), verdict::allow) << creds;
    while (creds.back() == '=') creds.pop_back();
    EXPECT_EQ(rules.check(with_authorization("Basic " + creds), visitor), verdict::allow) << creds;
  }
}

TEST(AccessRulesBasic, RefusesMalformedAuthorization) {
  auto rules = basic_rules("alice:pw1");
  auto good = base64("alice:pw1");  // "YWxpY2U6cHcx", no padding
  ASSERT_EQ(rules.check(with_authorization("Basic " + good), visitor), verdict::allow);
  std::vector<std::string> bad = {
      "Basic",
      "Basic ",
      "Basic" + good,
      "Digest " + good,
      "Bearer " + good,
      good,
      "Basic !" + good.substr(1),
      "Basic " + good.substr(0, 6) + " " + good.substr(6),
      "Basic " + good + " extra",
      "Basic " + good + "=",     // padding on a complete block
      "Basic " + good + "====",  // too much padding
      "Basic " + good + "A",     // 13 characters: not a length base64 can have
      "Basic " + good.substr(0, 4) + "=" + good.substr(5),
      "Basic " + base64("alicepw1"),  // no colon
      "Basic " + base64("alice:pw1").substr(0, 8),
  };
  for (const auto& value : bad)
    EXPECT_EQ(rules.check(with_authorization(value), visitor), verdict::need_basic) << value;
}

TEST(AccessRulesBasic, RefusesOversizedAuthorizationEvenIfCorrect) {
  std::string pw(3500, 'p');
  auto rules = basic_rules("alice:" + pw);
  auto value = basic("alice", pw);
  ASSERT_GT(value.size(), access_rules::max_authorization_size);
  EXPECT_EQ(rules.check(with_authorization(value), visitor), verdict::need_basic);

  std::string fits(3000, 'p');  // just under the bound: accepted, so only the size refused above
  auto small = basic_rules("alice:" + fits);
  ASSERT_LE(basic("alice", fits).size(), access_rules::max_authorization_size);
  EXPECT_EQ(small.check(with_authorization(basic("alice", fits)), visitor), verdict::allow);
}

TEST(AccessRulesBasic, RefusesTwoAuthorizationHeaders) {
  auto rules = basic_rules("alice:pw");
  bhttp::fields f;
  f.insert(bhttp::field::authorization, basic("alice", "pw"));
  f.insert(bhttp::field::authorization, basic("alice", "pw"));
  EXPECT_EQ(rules.check(f, visitor), verdict::need_basic);
}

TEST(AccessRulesBasic, ParsedCredentialKeepsOnlyADigestOfAPlainPassword) {
  auto cred = parse_basic_auth("alice:hunter2-long-password");
  EXPECT_EQ(cred.user, "alice");
  EXPECT_FALSE(cred.hashed);
  auto d = sha256("hunter2-long-password");
  EXPECT_EQ(cred.secret, std::string(d.begin(), d.end()));
  EXPECT_EQ(cred.secret.find("hunter2"), std::string::npos);
}

// ---- Bearer ----

TEST(AccessRulesBearer, AcceptsEachConfiguredToken) {
  access_rules rules;
  rules.add_bearer("tok-one_ABC.123");
  rules.add_bearer(std::string("tok-two"));
  EXPECT_EQ(rules.check(with_authorization("Bearer tok-one_ABC.123"), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization("Bearer tok-two"), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization("bearer tok-two"), visitor), verdict::allow);
}

TEST(AccessRulesBearer, RefusesWrongMissingOrOtherScheme) {
  access_rules rules;
  rules.add_bearer("tok-two");
  EXPECT_EQ(rules.check({}, visitor), verdict::bad_bearer);
  std::vector<std::string> bad = {"Bearer tok-tw", "Bearer tok-two2",  "Bearer TOK-TWO",
                                  "Bearer",        "Bearer tok two",   "tok-two",
                                  "Basic tok-two", basic("tok", "two")};
  for (const auto& value : bad)
    EXPECT_EQ(rules.check(with_authorization(value), visitor), verdict::bad_bearer) << value;
}

TEST(AccessRulesBearer, RejectsUnusableTokensWithoutEchoingThem) {
  access_rules rules;
  EXPECT_NE(config_error_of([&] { rules.add_bearer(""); }), "");
  auto msg = config_error_of([&] { rules.add_bearer("secret token"); });
  EXPECT_EQ(msg.find("secret"), std::string::npos) << msg;
  msg = config_error_of([&] { rules.add_bearer("secret\ntoken"); });
  EXPECT_EQ(msg.find("secret"), std::string::npos) << msg;
  EXPECT_TRUE(rules.empty());
}

// ---- Basic and Bearer together ----

TEST(AccessRulesBoth, EitherValidCredentialPasses) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("alice:pw"));
  rules.add_bearer("tok");
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "pw")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization("Bearer tok"), visitor), verdict::allow);
}

TEST(AccessRulesBoth, RefusalNamesTheSchemeTried) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("alice:pw"));
  rules.add_bearer("tok");
  EXPECT_EQ(rules.check({}, visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "tok")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization("Bearer pw"), visitor), verdict::bad_bearer);
  // A token is not a Basic password, nor a password a token.
  EXPECT_EQ(rules.check(with_authorization("Basic " + base64("tok")), visitor),
            verdict::need_basic);
}

// ---- Required headers ----

TEST(AccessRulesHeader, NameIsCaseInsensitiveValueExact) {
  access_rules rules;
  rules.add_header(parse_required_header("X-Share-Key: Abc123"));
  bhttp::fields f;
  f.set("x-share-KEY", "Abc123");
  EXPECT_EQ(rules.check(f, visitor), verdict::allow);
  f.set("X-Share-Key", "abc123");
  EXPECT_EQ(rules.check(f, visitor), verdict::forbidden_header);
  f.set("X-Share-Key", "Abc1234");
  EXPECT_EQ(rules.check(f, visitor), verdict::forbidden_header);
  EXPECT_EQ(rules.check({}, visitor), verdict::forbidden_header);
  bhttp::fields other;
  other.set("X-Share-Keys", "Abc123");
  EXPECT_EQ(rules.check(other, visitor), verdict::forbidden_header);
}

TEST(AccessRulesHeader, AnyOfRepeatedRequestHeadersMayCarryTheValue) {
  access_rules rules;
  rules.add_header(parse_required_header("X-Key: right"));
  bhttp::fields f;
  f.insert("X-Key", "wrong");
  f.insert("x-key", "right");
  EXPECT_EQ(rules.check(f, visitor), verdict::allow);
}

TEST(AccessRulesHeader, EveryRequiredHeaderIsNeeded) {
  access_rules rules;
  rules.add_header(parse_required_header("X-One: 1"));
  rules.add_header(parse_required_header("X-Two: 2"));
  bhttp::fields f;
  f.set("X-One", "1");
  EXPECT_EQ(rules.check(f, visitor), verdict::forbidden_header);
  f.set("X-Two", "2");
  EXPECT_EQ(rules.check(f, visitor), verdict::allow);
}

TEST(AccessRulesHeader, ParsesNameAndTrimmedValue) {
  auto h = parse_required_header("X-Key:  v a:l  ");
  EXPECT_EQ(h.name, "X-Key");
  EXPECT_EQ(h.value, "v a:l");
  h = parse_required_header("Referer:https://example.com/");
  EXPECT_EQ(h.name, "Referer");
  EXPECT_EQ(h.value, "https://example.com/");
}

TEST(AccessRulesHeader, RejectsBadSpecsWithoutEchoingTheValue) {
  for (const char* spec : {"X-Key supersecret", "X Key: supersecret", ": supersecret",
                           "X-Key:   ", "X-Key: super\r\nsecret", "X-K\xc3\xa9y: supersecret"}) {
    auto msg = config_error_of([&] { parse_required_header(spec); });
    EXPECT_NE(msg, "") << spec;
    EXPECT_EQ(msg.find("secret"), std::string::npos) << msg;
  }
}

// ---- Allowed addresses ----

TEST(AccessRulesIp, Ipv4Networks) {
  access_rules rules;
  rules.add_allow_ip(parse_cidr("10.0.0.0/8"));
  rules.add_allow_ip(parse_cidr("192.0.2.7"));
  EXPECT_EQ(rules.check({}, addr("10.255.1.2")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("192.0.2.7")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("192.0.2.8")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("11.0.0.1")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("::a00:1")), verdict::forbidden_ip);  // v4-compatible, not v4
}

TEST(AccessRulesIp, Ipv6Networks) {
  access_rules rules;
  rules.add_allow_ip(parse_cidr("2001:db8::/32"));
  rules.add_allow_ip(parse_cidr("::1"));
  EXPECT_EQ(rules.check({}, addr("2001:db8::1")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("2001:db8:ffff:ffff::9")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("::1")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("::2")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("2001:db9::1")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("2001:db7:ffff::1")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("127.0.0.1")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check({}, addr("32.1.13.184")), verdict::forbidden_ip);  // 2001:db8 as v4
}

TEST(AccessRulesIp, MappedVisitorMatchesIpv4Rules) {
  access_rules rules;
  rules.add_allow_ip(parse_cidr("1.2.3.0/24"));
  EXPECT_EQ(rules.check({}, addr("::ffff:1.2.3.4")), verdict::allow);
  EXPECT_EQ(rules.check({}, addr("::ffff:1.2.4.4")), verdict::forbidden_ip);
}

TEST(AccessRulesIp, MappedNetworkIsStoredAsIpv4) {
  auto c = parse_cidr("::ffff:10.0.0.0/104");
  EXPECT_EQ(c.network, addr("10.0.0.0"));
  EXPECT_EQ(c.prefix, 8u);
  EXPECT_TRUE(c.contains(addr("10.9.9.9")));
  EXPECT_TRUE(c.contains(addr("::ffff:10.9.9.9")));
  EXPECT_FALSE(c.contains(addr("11.0.0.0")));
}

TEST(AccessRulesIp, PrefixBoundaries) {
  auto c = parse_cidr("192.168.1.7/23");
  EXPECT_EQ(c.network, addr("192.168.0.0"));  // host bits cleared
  EXPECT_EQ(c.prefix, 23u);
  EXPECT_TRUE(c.contains(addr("192.168.1.255")));
  EXPECT_FALSE(c.contains(addr("192.168.2.0")));
  auto all4 = parse_cidr("0.0.0.0/0");
  EXPECT_TRUE(all4.contains(addr("255.255.255.255")));
  EXPECT_FALSE(all4.contains(addr("::1")));
  auto all6 = parse_cidr("::/0");
  EXPECT_TRUE(all6.contains(addr("ffff::1")));
  EXPECT_FALSE(all6.contains(addr("1.2.3.4")));
  auto odd = parse_cidr("2001:db8:abcd::/45");
  EXPECT_EQ(odd.network, addr("2001:db8:abc8::"));
  EXPECT_TRUE(odd.contains(addr("2001:db8:abcf:ffff::1")));
  EXPECT_FALSE(odd.contains(addr("2001:db8:abd0::")));
  EXPECT_EQ(parse_cidr("::1").prefix, 128u);
  EXPECT_EQ(parse_cidr("10.1.2.3").prefix, 32u);
}

TEST(AccessRulesIp, RejectsBadSpecs) {
  for (const char* spec :
       {"", "banana", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8x", "10.0.0.0/-1",
        "10.0.0.0/0008", "10.0.0/8", "fe80::1%eth0/64", "/8", "10.0.0.0/8/8"}) {
    EXPECT_NE(config_error_of([&] { parse_cidr(spec); }), "") << spec;
  }
}

// ---- Order of checks ----

TEST(AccessRulesOrder, AddressThenHeaderThenAuthentication) {
  access_rules rules;
  rules.add_allow_ip(parse_cidr("2001:db8::/32"));
  rules.add_header(parse_required_header("X-Key: k"));
  rules.add_basic(parse_basic_auth("alice:pw"));
  auto inside = addr("2001:db8::5");
  bhttp::fields f;
  f.set(bhttp::field::authorization, basic("alice", "pw"));
  EXPECT_EQ(rules.check(f, addr("2001:db9::5")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check(f, inside), verdict::forbidden_header);
  f.set("X-Key", "k");
  EXPECT_EQ(rules.check(f, addr("2001:db9::5")), verdict::forbidden_ip);
  EXPECT_EQ(rules.check(f, inside), verdict::allow);
  f.erase(bhttp::field::authorization);
  EXPECT_EQ(rules.check(f, inside), verdict::need_basic);
}

// ---- Hashed passwords ----

TEST(AccessRulesHash, KnownBcryptHash) {
  // crypt_blowfish's test vector, with the $2b$ prefix.
  auto rules = basic_rules("alice:$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW");
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "U*U")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "U*V")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "U*U")), visitor), verdict::need_basic);
}

TEST(AccessRulesHash, KnownSha512CryptHash) {
  // openssl passwd -6 -salt burrowsalt 'correct horse'
  auto rules = basic_rules(
      "alice:$6$burrowsalt$fpTHXyfXsv4NSCQxUgi.kKx0eUy9EhEiKmrJx8o9Q41DiI9p4VoyI1KsGIEVGyO6C6xTbYHt"
      "KiguAzlL6bwzh/");
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "correct horse")), visitor),
            verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "correct horsE")), visitor),
            verdict::need_basic);
}

TEST(AccessRulesHash, GeneratedHashesOfEveryPrefix) {
  for (auto [prefix, count] :
       {std::pair{"$2b$", 4ul}, {"$2y$", 4ul}, {"$2a$", 4ul}, {"$6$", 1000ul}}) {
    auto hash = make_hash(prefix, count, "pass word:1");
    ASSERT_TRUE(hash.starts_with(prefix)) << hash;
    auto cred = parse_basic_auth("carol:" + hash);
    EXPECT_TRUE(cred.hashed);
    EXPECT_EQ(cred.secret, hash);
    access_rules rules;
    rules.add_basic(cred);
    EXPECT_EQ(rules.check(with_authorization(basic("carol", "pass word:1")), visitor),
              verdict::allow)
        << prefix;
    EXPECT_EQ(rules.check(with_authorization(basic("carol", "pass word:2")), visitor),
              verdict::need_basic)
        << prefix;
  }
}

TEST(AccessRulesHash, PasswordWithNulDoesNotMatchItsPrefix) {
  auto rules = basic_rules("alice:" + make_hash("$2b$", 4, "abc"));
  ASSERT_EQ(rules.check(with_authorization(basic("alice", "abc")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", std::string("abc\0xyz", 7))), visitor),
            verdict::need_basic);
}

TEST(AccessRulesHash, PlainAndHashedUsersTogether) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("alice:plain-pw"));
  rules.add_basic(parse_basic_auth("bob:" + make_hash("$6$", 1000, "hashed-pw")));
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "plain-pw")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "hashed-pw")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "plain-pw")), visitor),
            verdict::need_basic);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "hashed-pw")), visitor),
            verdict::need_basic);
}

TEST(AccessRulesHash, RejectsMalformedHashesWithoutEchoingThem) {
  auto good = make_hash("$2b$", 4, "pw");
  auto sha = make_hash("$6$", 1000, "pw");
  std::vector<std::string> bad = {
      "$2b$10$tooshortSECRET",
      good.substr(0, 29),                          // salt without the hash part
      good.substr(0, 59),                          // one character short
      good.substr(0, 30) + "!" + good.substr(31),  // not the crypt alphabet
      good.substr(0, 40) + "@" + good.substr(41),  // one that crypt_r itself lets through
      sha.substr(0, sha.size() - 1),               // one character short
      sha.substr(0, sha.size() - 2) + "@" + sha.back(),
      "$2b$4$" + good.substr(7) + "x",                    // cost without two digits
      "$2b$03$" + good.substr(7),                         // cost below bcrypt's minimum
      "$6$",                                              // no salt, no hash
      "$6$SECRETsalt$",                                   // no hash
      "$6$SECRETsalt$" + std::string(86, '*'),            // wrong alphabet
      "$6$rounds=10$SECRETsalt$" + std::string(86, 'a'),  // rounds crypt would change
  };
  for (const auto& hash : bad) {
    auto msg = config_error_of([&] { parse_basic_auth("alice:" + hash); });
    EXPECT_NE(msg, "") << hash;
    EXPECT_EQ(msg.find("SECRET"), std::string::npos) << msg;
    if (hash.size() > 17) {
      EXPECT_EQ(msg.find(hash.substr(7, 10)), std::string::npos) << msg;
    }
  }
}

TEST(AccessRulesHash, RejectsCostsThatWouldStallEveryLogin) {
  auto good = make_hash("$2b$", 4, "pw");
  // Just above the bounds, so that a missing bound fails in seconds rather than hanging.
  auto msg = config_error_of([&] { parse_basic_auth("alice:$2b$15$" + good.substr(7)); });
  EXPECT_NE(msg.find("cost"), std::string::npos) << msg;
  msg = config_error_of(
      [&] { parse_basic_auth("alice:$6$rounds=500001$salt$" + std::string(86, 'a')); });
  EXPECT_NE(msg.find("rounds"), std::string::npos) << msg;
}

TEST(AccessRulesHash, GoodCredentialsAreVerifiedOnceFailuresEveryTime) {
  auto rules = basic_rules("alice:" + make_hash("$2b$", 4, "pw"));
  auto good = with_authorization(basic("alice", "pw"));
  EXPECT_EQ(rules.hash_verifications(), 0u);
  EXPECT_EQ(rules.check(good, visitor), verdict::allow);
  EXPECT_EQ(rules.hash_verifications(), 1u);
  EXPECT_EQ(rules.check(good, visitor), verdict::allow);
  EXPECT_EQ(rules.check(good, visitor), verdict::allow);
  EXPECT_EQ(rules.hash_verifications(), 1u);
  auto wrong = with_authorization(basic("alice", "px"));
  EXPECT_EQ(rules.check(wrong, visitor), verdict::need_basic);
  EXPECT_EQ(rules.check(wrong, visitor), verdict::need_basic);
  EXPECT_EQ(rules.hash_verifications(), 3u);
  // An unknown user costs no hash run at all.
  EXPECT_EQ(rules.check(with_authorization(basic("mallory", "pw")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.hash_verifications(), 3u);
}

TEST(AccessRulesHash, PlainPasswordsNeverRunAHash) {
  auto rules = basic_rules("alice:pw");
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "pw")), visitor), verdict::allow);
  EXPECT_EQ(rules.check(with_authorization(basic("alice", "px")), visitor), verdict::need_basic);
  EXPECT_EQ(rules.hash_verifications(), 0u);
}

TEST(AccessRulesHash, CacheIsBoundedAndEvictsTheLeastRecentlyUsed) {
  constexpr std::size_t n = access_rules::verified_cache_size;
  access_rules rules;
  auto hash = make_hash("$2b$", 4, "pw");
  for (std::size_t i = 0; i <= n; ++i) rules.add_basic(parse_basic_auth(fmt_user(i) + ":" + hash));
  rules.set_hash_budget(0);  // 65 different good logins in well under a second
  auto login = [&](std::size_t i) {
    EXPECT_EQ(rules.check(with_authorization(basic(fmt_user(i), "pw")), visitor), verdict::allow);
  };
  for (std::size_t i = 0; i < n; ++i) login(i);
  EXPECT_EQ(rules.hash_verifications(), n);
  login(0);  // user0 becomes the most recently used; user1 the least
  EXPECT_EQ(rules.hash_verifications(), n);
  login(n);  // evicts user1
  EXPECT_EQ(rules.hash_verifications(), n + 1);
  login(0);
  login(n);
  login(2);
  EXPECT_EQ(rules.hash_verifications(), n + 1);
  login(1);
  EXPECT_EQ(rules.hash_verifications(), n + 2);
}

TEST(AccessRulesHash, ThreadsShareTheCache) {
  auto rules = basic_rules("alice:" + make_hash("$2b$", 4, "pw"));
  auto good = with_authorization(basic("alice", "pw"));
  ASSERT_EQ(rules.check(good, visitor), verdict::allow);
  std::vector<std::thread> threads;
  std::atomic<int> allowed{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) allowed += rules.check(good, visitor) == verdict::allow;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(allowed.load(), 200);
  EXPECT_EQ(rules.hash_verifications(), 1u);
}

TEST(AccessRulesHash, CopyKeepsRulesButStartsWithAnEmptyCache) {
  auto rules = basic_rules("alice:" + make_hash("$2b$", 4, "pw"));
  auto good = with_authorization(basic("alice", "pw"));
  ASSERT_EQ(rules.check(good, visitor), verdict::allow);
  access_rules copy = rules;
  EXPECT_EQ(copy.hash_verifications(), 0u);
  EXPECT_EQ(copy.check(good, visitor), verdict::allow);
  EXPECT_EQ(copy.hash_verifications(), 1u);
  EXPECT_EQ(copy.check(with_authorization(basic("alice", "px")), visitor), verdict::need_basic);
}

// ---- Basic auth specs ----

TEST(AccessRulesSpec, RejectsBadBasicSpecsWithoutEchoingThem) {
  for (const char* spec : {"aliceSECRETpw", ":SECRETpw", "alice:", "al\nice:SECRETpw"}) {
    auto msg = config_error_of([&] { parse_basic_auth(spec); });
    EXPECT_NE(msg, "") << spec;
    EXPECT_EQ(msg.find("SECRET"), std::string::npos) << msg;
  }
}

// ---- Refusals ----

bhttp::response<bhttp::string_body> parse_response(const std::string& text) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.eager(true);
  boost::system::error_code ec;
  auto used = parser.put(boost::asio::buffer(text), ec);
  EXPECT_FALSE(ec) << ec.message() << "\n" << text;
  EXPECT_TRUE(parser.is_done()) << text;
  EXPECT_EQ(used, text.size()) << text;
  return parser.release();
}

std::string field(const bhttp::response<bhttp::string_body>& res, bhttp::field f) {
  auto it = res.find(f);
  return it == res.end() ? "<none>" : std::string(it->value());
}

TEST(AccessRulesResponse, BasicChallenge) {
  auto res = parse_response(refusal_response(verdict::need_basic, "demo.example.com"));
  EXPECT_EQ(res.result(), bhttp::status::unauthorized);
  EXPECT_EQ(res.version(), 11u);
  EXPECT_EQ(field(res, bhttp::field::www_authenticate),
            "Basic realm=\"demo.example.com\", charset=\"UTF-8\"");
  EXPECT_EQ(field(res, bhttp::field::content_type), "text/plain; charset=utf-8");
  EXPECT_EQ(field(res, bhttp::field::connection), "close");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(res.body(), "authentication required\n");
}

TEST(AccessRulesResponse, BearerChallenge) {
  auto res = parse_response(refusal_response(verdict::bad_bearer, "demo.example.com"));
  EXPECT_EQ(res.result(), bhttp::status::unauthorized);
  EXPECT_TRUE(field(res, bhttp::field::www_authenticate).starts_with("Bearer"));
  EXPECT_EQ(res.body(), "authentication required\n");
}

TEST(AccessRulesResponse, ForbiddenHasNoChallenge) {
  for (auto v : {verdict::forbidden_ip, verdict::forbidden_header}) {
    auto res = parse_response(refusal_response(v, "demo.example.com"));
    EXPECT_EQ(res.result(), bhttp::status::forbidden);
    EXPECT_EQ(field(res, bhttp::field::www_authenticate), "<none>");
    EXPECT_EQ(field(res, bhttp::field::content_length), std::to_string(res.body().size()));
    EXPECT_EQ(res.body(), "forbidden\n");
    EXPECT_FALSE(res.keep_alive());
  }
}

TEST(AccessRulesResponse, RealmCannotInjectHeaders) {
  auto text = refusal_response(verdict::need_basic, "evil\"\r\nSet-Cookie: a=\\1");
  auto res = parse_response(text);
  EXPECT_EQ(field(res, bhttp::field::set_cookie), "<none>");
  EXPECT_EQ(field(res, bhttp::field::www_authenticate),
            "Basic realm=\"evil\\\"Set-Cookie: a=\\\\1\", charset=\"UTF-8\"");
}

TEST(AccessRulesResponse, AllowHasNoResponse) {
  EXPECT_EQ(refusal_response(verdict::allow, "x"), "");
}

TEST(AccessRulesResponse, DescriptionsAreDistinct) {
  std::vector<std::string_view> seen;
  for (auto v : {verdict::allow, verdict::need_basic, verdict::bad_bearer, verdict::forbidden_ip,
                 verdict::forbidden_header}) {
    auto d = describe(v);
    EXPECT_FALSE(d.empty());
    EXPECT_EQ(std::count(seen.begin(), seen.end(), d), 0) << d;
    seen.push_back(d);
  }
  EXPECT_EQ(describe(verdict::need_basic), "missing or wrong credentials");
  EXPECT_EQ(describe(verdict::forbidden_ip), "address not allowed");
}

TEST(AccessRulesBasic, WrongPasswordsCannotSpendMoreThanTheHashBudget) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("bob:" + make_hash("$2b$", 4, "right")));
  // A good login first: it is cached, and stays good whatever happens next.
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "right")), visitor), verdict::allow);
  for (int i = 0; i < 40; ++i)
    EXPECT_EQ(rules.check(with_authorization(basic("bob", "wrong" + std::to_string(i))), visitor),
              verdict::need_basic);
  // Forty wrong passwords within a second or two: at most the budget of two seconds was hashed.
  EXPECT_LE(rules.hash_verifications(), 1u + 2 * access_rules::hash_budget_per_second);
  EXPECT_GE(rules.hash_budget_refusals(), 40u - 2 * access_rules::hash_budget_per_second);
  EXPECT_EQ(rules.check(with_authorization(basic("bob", "right")), visitor), verdict::allow);
}

TEST(AccessRulesSpec, TheRelaysCopyDecidesAlikeAndHoldsNoSecret) {
  access_rules rules;
  rules.add_basic(parse_basic_auth("alice:wonderland"));
  rules.add_basic(parse_basic_auth("bob:" + make_hash("$6$", 1000, "hashed")));
  rules.add_bearer("tok-abcdef");
  rules.add_header(parse_required_header("X-Team: blue"));
  rules.add_allow_ip(parse_cidr("203.0.113.0/24"));
  rules.add_allow_ip(parse_cidr("2001:db8::/32"));
  auto spec = rules.to_spec();
  std::string text;
  for (auto& b : spec.basic) text += b.user + b.secret;
  for (auto& t : spec.bearer_sha256) text += t;
  for (auto& h : spec.headers) text += h.name + h.value_sha256;
  for (const char* secret : {"wonderland", "tok-abcdef", "blue"})
    EXPECT_EQ(text.find(secret), std::string::npos) << secret;
  auto copy = access_rules::from_spec(spec);
  auto request = [](std::string authorization, bool team) {
    bhttp::fields f;
    if (!authorization.empty()) f.set(bhttp::field::authorization, authorization);
    if (team) f.set("X-Team", "blue");
    return f;
  };
  for (auto f : {request(basic("alice", "wonderland"), true), request(basic("bob", "hashed"), true),
                 request("Bearer tok-abcdef", true), request("Bearer tok-abcdef", false),
                 request(basic("alice", "nope"), true), request("", true)}) {
    EXPECT_EQ(copy.check(f, visitor), rules.check(f, visitor));
    EXPECT_EQ(copy.check(f, addr("198.51.100.1")), verdict::forbidden_ip);
    EXPECT_EQ(copy.check(f, addr("2001:db8::1")), rules.check(f, addr("2001:db8::1")));
  }
  // Malformed specs are refused, naming nothing secret.
  auto broken = spec;
  broken.bearer_sha256[0] = "zz";
  EXPECT_THROW(access_rules::from_spec(broken), config_error);
  broken = spec;
  broken.basic[1].secret = "$6$bad";
  EXPECT_THROW(access_rules::from_spec(broken), config_error);
  broken = spec;
  broken.headers[0].name = "X Team";
  EXPECT_THROW(access_rules::from_spec(broken), config_error);
  broken = spec;
  broken.allow_ip[0] = "not-an-address";
  EXPECT_THROW(access_rules::from_spec(broken), config_error);
}

}  // namespace
}  // namespace burrow::http
