// Per-share-URL visitor access rules (--basic-auth, --bearer, --require-header, --allow-ip):
// parsed from flags, checked once per request head. Pure: no I/O, no logging.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/fields.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proto/control.hpp"

namespace burrow::http {

// Make with parse_basic_auth, which validates the hash.
struct basic_credential {
  std::string user;
  // hashed: a crypt(3) string ($2b$, $2y$, $2a$ bcrypt or $6$ SHA-512 crypt); otherwise the
  // 32-byte SHA-256 of the password, so the plain password is not kept.
  std::string secret;
  bool hashed = false;
};

struct required_header {
  std::string name;   // matched case-insensitively
  std::string value;  // matched exactly, in constant time
};

struct cidr {
  // IPv4-mapped IPv6 networks (::ffff:a.b.c.d/n, n >= 96) are stored as IPv4; host bits are zero.
  boost::asio::ip::address network;
  unsigned prefix = 0;
  // An IPv4-mapped IPv6 visitor address matches IPv4 networks; v4 and v6 never match otherwise.
  bool contains(const boost::asio::ip::address& visitor) const;
};

// Each throws burrow::config_error whose message never contains the password, hash, token or
// header value.
// "user:password" split at the first colon; a password starting with $2b$, $2y$, $2a$ or $6$ is a
// crypt hash, checked to be well-formed here so that a bad hash is a config error. Costs above
// bcrypt 14 or SHA-512 rounds=500000 are refused: each cache miss would cost seconds of CPU.
basic_credential parse_basic_auth(std::string_view spec);
// "Name: value"; the name must be an HTTP token, the value non-empty (surrounding blanks dropped).
required_header parse_required_header(std::string_view spec);
// "10.0.0.0/8", "2001:db8::/32", or a bare address meaning /32 or /128. Host bits below the prefix
// are cleared ("192.168.1.7/24" is 192.168.1.0/24); zone ids are refused.
cidr parse_cidr(std::string_view spec);

// Order of checks, first failure wins:
//   1. allow-ip: the visitor must be in one of the networks, else forbidden_ip (403);
//   2. require-header: every configured header must be present with its exact value (any one of
//      several same-named request headers may carry it), else forbidden_header (403);
//   3. authentication: with both basic and bearer configured, one valid credential of either kind
//      passes; with only one kind configured, that kind is required. On failure the verdict is
//      bad_bearer when the request tried the Bearer scheme or only bearer is configured, and
//      need_basic otherwise (so browsers show their login prompt).
// No rules at all allow everything. The Authorization header must appear once and be at most
// max_authorization_size bytes; anything else counts as missing credentials.
//
// Secrets are compared in constant time. Hashed passwords cost a crypt_r run (bcrypt: ~100 ms), so
// Authorization values that verified good against a hash are remembered (SHA-256 of the value, at
// most verified_cache_size, least recently used evicted); failures are never remembered.
//
// The add_ functions are for setup; check() is safe to call from many threads at once.
class access_rules {
 public:
  static constexpr std::size_t max_authorization_size = 4096;
  static constexpr std::size_t verified_cache_size = 64;
  // By default at most this many crypt runs per second for one share URL (all visitors
  // together); beyond it a password checked against a hash counts as wrong without being hashed.
  // Cached good credentials are not affected.
  static constexpr unsigned hash_budget_per_second = 8;

  access_rules();
  ~access_rules();
  // A copy has the same rules and an empty cache.
  access_rules(const access_rules& other);
  access_rules& operator=(const access_rules& other);
  access_rules(access_rules&&) noexcept;
  access_rules& operator=(access_rules&&) noexcept;

  // Throws std::invalid_argument for a credential parse_basic_auth could not have made.
  void add_basic(basic_credential credential);
  // Throws config_error if the token is empty or has characters other than visible ASCII.
  void add_bearer(std::string_view token);
  void add_header(required_header header);
  void add_allow_ip(cidr network);

  bool empty() const;
  // Crypt runs allowed per second; 0: no limit.
  void set_hash_budget(unsigned per_second);

  // The rules as digests and hashes only, for an inspect-mode relay to enforce: to_spec() on the
  // agent, from_spec() on the relay (throws config_error, naming no secret, on malformed input).
  proto::access_spec to_spec() const;
  static access_rules from_spec(const proto::access_spec& spec);

  enum class verdict { allow, need_basic, bad_bearer, forbidden_ip, forbidden_header };

  verdict check(const boost::beast::http::fields& headers,
                const boost::asio::ip::address& visitor) const;

  // How many times a password was checked against a crypt hash (cache misses); for metrics.
  std::uint64_t hash_verifications() const;
  // How many checks were refused unhashed because the second's budget was spent.
  std::uint64_t hash_budget_refusals() const;

 private:
  using digest = std::array<std::uint8_t, 32>;
  struct basic_entry {
    digest user_sha256;
    basic_credential cred;
  };
  struct header_rule {
    std::string name;
    digest value_sha256;
  };
  struct verified_cache;

  bool basic_ok(std::string_view authorization, std::string_view credentials) const;
  bool bearer_ok(std::string_view token) const;

  std::vector<basic_entry> basic_;
  std::vector<digest> bearer_;  // SHA-256 of each token
  std::vector<header_rule> header_rules_;
  std::vector<cidr> allow_ip_;
  std::unique_ptr<verified_cache> cache_;
};

// A complete HTTP/1.1 response refusing the request: 401 with WWW-Authenticate (Basic with realm
// and charset="UTF-8", or Bearer with realm) or 403; text/plain body; Connection: close. realm is
// the share URL's host; quotes, backslashes and control characters in it are made harmless.
// Empty for verdict::allow.
std::string refusal_response(access_rules::verdict v, std::string_view realm);

// For logs, never containing a secret: "missing or wrong credentials", "address not allowed"...
std::string_view describe(access_rules::verdict v);

}  // namespace burrow::http
