// Visitor access rules: spec parsing, the per-request check, refusal responses.
#include "http/access_rules.hpp"

#include "core/address.hpp"
#include "core/secret.hpp"
#include "core/settings.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <crypt.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

namespace burrow::http {
namespace {

namespace ip = boost::asio::ip;
namespace bhttp = boost::beast::http;
using digest = std::array<std::uint8_t, 32>;

// Above these a single login would take seconds of CPU (and parsing, which runs the hash once).
constexpr unsigned max_bcrypt_cost = 14;
constexpr unsigned long max_sha512_rounds = 500000;

std::string_view view(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

bool same_digest(const digest& a, const digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// RFC 9110 tchar.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_visible_ascii(char c) {
  return c > 0x20 && c < 0x7f;
}

// A string that is wiped before its memory is released; holds decoded passwords.
struct wiped_string {
  std::string s;
  wiped_string() = default;
  wiped_string(const wiped_string&) = delete;
  wiped_string& operator=(const wiped_string&) = delete;
  ~wiped_string() {
    if (!s.empty()) OPENSSL_cleanse(s.data(), s.size());
  }
};

// Standard base64 with or without '=' padding; false for anything else. EVP_DecodeBlock alone
// would skip blanks, and turns padding into zero bytes that it counts in its result.
bool decode_base64(std::string_view in, wiped_string& out) {
  std::size_t pad = 0;
  while (pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  std::string_view body = in.substr(0, in.size() - pad);
  if (body.empty() || pad > 2) return false;
  if (pad > 0 && in.size() % 4 != 0) return false;
  if (body.size() % 4 == 1) return false;
  for (char c : body) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/';
    if (!ok) return false;
  }
  std::size_t missing = (4 - body.size() % 4) % 4;
  wiped_string padded;
  padded.s.reserve(body.size() + missing + 1);
  padded.s.append(body).append(missing, '=');
  out.s.assign(padded.s.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.s.data()),
                          reinterpret_cast<const unsigned char*>(padded.s.data()),
                          static_cast<int>(padded.s.size()));
  if (n < 0 || static_cast<std::size_t>(n) != out.s.size()) return false;
  std::size_t real = out.s.size() - missing;
  OPENSSL_cleanse(out.s.data() + real, out.s.size() - real);
  out.s.resize(real);
  return true;
}

enum class hash_kind { none, bcrypt, sha512 };

hash_kind kind_of(std::string_view secret) {
  for (std::string_view p : {"$2b$", "$2y$", "$2a$"})
    if (secret.starts_with(p)) return hash_kind::bcrypt;
  if (secret.starts_with("$6$")) return hash_kind::sha512;
  return hash_kind::none;
}

// Runs crypt_r(password, setting); nullopt when libxcrypt refuses ("*0", "*1" or null).
std::optional<std::string> run_crypt(const char* password, const std::string& setting) {
  auto data = std::make_unique<crypt_data>();  // value-initialized: zeroed, as crypt_r requires
  const char* out = crypt_r(password, setting.c_str(), data.get());
  std::optional<std::string> result;
  if (out != nullptr && out[0] != '*') result.emplace(out);
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return result;
}

bool is_crypt_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '/';
}

// Cost bounds and shape; then libxcrypt must reproduce the hash's setting for a dummy password
// (a setting without its hash part, or a non-canonical salt, would otherwise never match).
void check_hash(const std::string& hash, hash_kind kind) {
  std::size_t setting_end = 0;  // the prefix crypt_r must give back unchanged
  if (kind == hash_kind::bcrypt) {
    // $2b$NN$ + 22 salt characters + 31 hash characters
    unsigned cost = 0;
    auto [p, ec] =
        std::from_chars(hash.data() + 4, hash.data() + std::min<std::size_t>(hash.size(), 6), cost);
    if (hash.size() != 60 || ec != std::errc{} || p != hash.data() + 6 || hash[6] != '$')
      throw config_error(
          "--basic-auth: the bcrypt hash is malformed (expected $2b$NN$ and 53 characters)");
    if (cost > max_bcrypt_cost)
      throw config_error("--basic-auth: the bcrypt cost " + std::to_string(cost) + " is above " +
                         std::to_string(max_bcrypt_cost) + "; every login would take seconds");
    setting_end = 29;
  } else {
    std::string_view rest = std::string_view(hash).substr(3);
    if (rest.starts_with("rounds=")) {
      unsigned long rounds = 0;
      auto [p, ec] = std::from_chars(rest.data() + 7, rest.data() + rest.size(), rounds);
      if (ec == std::errc::result_out_of_range || (ec == std::errc{} && rounds > max_sha512_rounds))
        throw config_error("--basic-auth: the SHA-512 crypt rounds are above " +
                           std::to_string(max_sha512_rounds) + "; every login would take seconds");
    }
    setting_end = hash.rfind('$') + 1;
  }
  // The hash part: crypt_r checks the salt itself but ignores what follows a bcrypt salt.
  std::string_view tail = std::string_view(hash).substr(setting_end);
  bool shaped = !tail.empty() && std::all_of(tail.begin(), tail.end(), is_crypt_char);
  auto out = shaped ? run_crypt("burrow hash check", hash) : std::nullopt;
  if (!out || out->size() != hash.size() || out->compare(0, setting_end, hash, 0, setting_end) != 0)
    throw config_error(kind == hash_kind::bcrypt
                           ? "--basic-auth: the bcrypt hash is malformed"
                           : "--basic-auth: the SHA-512 crypt hash is malformed");
}

bool crypt_matches(std::string_view password, const std::string& hash) {
  // crypt_r takes a C string: an embedded NUL would cut the password short.
  if (password.size() >= CRYPT_MAX_PASSPHRASE_SIZE || password.find('\0') != std::string_view::npos)
    return false;
  wiped_string pw;
  pw.s.reserve(password.size() + 1);
  pw.s.assign(password);
  auto out = run_crypt(pw.s.c_str(), hash);
  return out && constant_time_equal(*out, hash);
}

std::string realm_text(std::string_view realm) {
  std::string out;
  for (char c : realm.substr(0, 255)) {
    if (c < 0x20 || c >= 0x7f) continue;  // no CR/LF injection, ASCII only
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

// ---- cidr and specs ----

bool cidr::contains(const ip::address& visitor) const {
  ip::address a = unmapped(visitor);
  if (a.is_v4() != network.is_v4()) return false;
  auto compare = [this](const auto& x, const auto& y) {
    unsigned bits = prefix;
    for (std::size_t i = 0; i < x.size() && bits > 0; ++i) {
      unsigned take = std::min(bits, 8u);
      auto mask = static_cast<std::uint8_t>(0xff << (8 - take));
      if ((x[i] & mask) != (y[i] & mask)) return false;
      bits -= take;
    }
    return true;
  };
  if (a.is_v4()) return compare(a.to_v4().to_bytes(), network.to_v4().to_bytes());
  return compare(a.to_v6().to_bytes(), network.to_v6().to_bytes());
}

basic_credential parse_basic_auth(std::string_view spec) {
  auto colon = spec.find(':');
  if (colon == std::string_view::npos)
    throw config_error("--basic-auth needs user:password (or user:hash)");
  std::string_view user = spec.substr(0, colon), secret = spec.substr(colon + 1);
  if (user.empty()) throw config_error("--basic-auth: the user name is empty");
  if (!std::all_of(user.begin(), user.end(), [](char c) { return c >= 0x20 && c != 0x7f; }))
    throw config_error("--basic-auth: the user name has control characters");
  if (secret.empty()) throw config_error("--basic-auth: the password is empty");
  basic_credential cred;
  cred.user = std::string(user);
  if (auto kind = kind_of(secret); kind != hash_kind::none) {
    cred.secret = std::string(secret);
    cred.hashed = true;
    check_hash(cred.secret, kind);
  } else {
    auto d = sha256(secret);
    cred.secret.assign(d.begin(), d.end());
  }
  return cred;
}

required_header parse_required_header(std::string_view spec) {
  auto colon = spec.find(':');
  if (colon == std::string_view::npos) throw config_error("--require-header needs 'Name: value'");
  std::string_view name = spec.substr(0, colon), value = trim(spec.substr(colon + 1));
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char))
    throw config_error("--require-header: the header name is empty or not an HTTP token");
  if (value.empty()) throw config_error("--require-header: the header value is empty");
  if (!std::all_of(value.begin(), value.end(),
                   [](char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }))
    throw config_error("--require-header: the header value has control characters");
  return {std::string(name), std::string(value)};
}

cidr parse_cidr(std::string_view spec) {
  auto bad = [&](std::string_view why) {
    return config_error("--allow-ip '" + std::string(spec) + "': " + std::string(why));
  };
  auto slash = spec.find('/');
  std::string addr(spec.substr(0, slash));
  if (addr.find('%') != std::string::npos) throw bad("zone ids are not supported");
  boost::system::error_code ec;
  auto network = ip::make_address(addr, ec);
  if (ec) throw bad("not an IPv4 or IPv6 address");
  unsigned max = network.is_v4() ? 32 : 128;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view digits = spec.substr(slash + 1);
    auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (digits.empty() || digits.size() > 3 || err != std::errc{} ||
        p != digits.data() + digits.size() || prefix > max)
      throw bad("the prefix length must be 0 to " + std::to_string(max));
  }
  if (network.is_v6() && network.to_v6().is_v4_mapped() && prefix >= 96) {
    network = ip::make_address_v4(ip::v4_mapped, network.to_v6());
    prefix -= 96;
  }
  // Clear the host bits so the stored network is canonical.
  auto clear = [prefix](auto bytes) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      unsigned keep = prefix > i * 8 ? std::min(prefix - static_cast<unsigned>(i * 8), 8u) : 0;
      bytes[i] &= static_cast<std::uint8_t>(0xff00 >> keep);
    }
    return bytes;
  };
  if (network.is_v4())
    network = ip::address_v4(clear(network.to_v4().to_bytes()));
  else
    network = ip::address_v6(clear(network.to_v6().to_bytes()));
  return {network, prefix};
}

// ---- access_rules ----

// Successful hashed verifications, keyed by the SHA-256 of the Authorization value.
struct access_rules::verified_cache {
  struct entry {
    digest key{};
    std::uint64_t last_used = 0;  // 0: empty slot
  };
  mutable std::mutex mutex;
  std::array<entry, verified_cache_size> entries{};
  std::uint64_t clock = 0;
  std::atomic<std::uint64_t> verifications{0};
  std::atomic<std::uint64_t> over_budget{0};
  // Crypt runs allowed in the current second, across all visitors: a visitor who knows a user
  // name cannot make the agent spend more than this much CPU on wrong passwords.
  std::chrono::steady_clock::time_point budget_second{};
  unsigned budget_used = 0;
  unsigned budget = hash_budget_per_second;

  bool take_budget() {
    std::lock_guard lock(mutex);
    auto now = std::chrono::steady_clock::now();
    if (now - budget_second >= std::chrono::seconds(1)) {
      budget_second = now;
      budget_used = 0;
    }
    if (budget != 0 && budget_used >= budget) return false;
    ++budget_used;
    return true;
  }

  bool find(const digest& key) {
    std::lock_guard lock(mutex);
    for (auto& e : entries) {
      if (e.last_used != 0 && same_digest(e.key, key)) {
        e.last_used = ++clock;
        return true;
      }
    }
    return false;
  }

  void insert(const digest& key) {
    std::lock_guard lock(mutex);
    auto oldest = entries.begin();
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (it->last_used != 0 && same_digest(it->key, key)) return;  // another thread won
      if (it->last_used < oldest->last_used) oldest = it;
    }
    *oldest = {key, ++clock};
  }
};

access_rules::access_rules() : cache_(std::make_unique<verified_cache>()) {}
access_rules::~access_rules() = default;
access_rules::access_rules(access_rules&&) noexcept = default;
access_rules& access_rules::operator=(access_rules&&) noexcept = default;

access_rules::access_rules(const access_rules& other)
    : basic_(other.basic_),
      bearer_(other.bearer_),
      header_rules_(other.header_rules_),
      allow_ip_(other.allow_ip_),
      cache_(std::make_unique<verified_cache>()) {
  if (other.cache_) cache_->budget = other.cache_->budget;
}

access_rules& access_rules::operator=(const access_rules& other) {
  if (this != &other) *this = access_rules(other);
  return *this;
}

void access_rules::add_basic(basic_credential credential) {
  // basic_ok reads 32 bytes of a plain secret; only parse_basic_auth's shapes are accepted.
  if (credential.hashed ? kind_of(credential.secret) == hash_kind::none
                        : credential.secret.size() != 32)
    throw std::invalid_argument("access_rules::add_basic: credential not made by parse_basic_auth");
  basic_.push_back({sha256(credential.user), std::move(credential)});
}

void access_rules::add_bearer(std::string_view token) {
  if (token.empty() || !std::all_of(token.begin(), token.end(), is_visible_ascii))
    throw config_error("--bearer: the token must be non-empty printable ASCII without spaces");
  bearer_.push_back(sha256(token));
}

void access_rules::add_header(required_header header) {
  header_rules_.push_back({std::move(header.name), sha256(header.value)});
}

void access_rules::add_allow_ip(cidr network) {
  allow_ip_.push_back(std::move(network));
}

namespace {

std::optional<digest> digest_from_hex(std::string_view text) {
  digest d{};
  if (from_hex(text, d) != d.size()) return std::nullopt;
  return d;
}

}  // namespace

proto::access_spec access_rules::to_spec() const {
  proto::access_spec out;
  for (const auto& b : basic_) {
    std::string secret =
        b.cred.hashed ? b.cred.secret
                      : hex(std::span(reinterpret_cast<const std::uint8_t*>(b.cred.secret.data()),
                                      b.cred.secret.size()));
    out.basic.push_back({b.cred.user, std::move(secret), b.cred.hashed});
  }
  for (const auto& t : bearer_) out.bearer_sha256.push_back(hex(t));
  for (const auto& h : header_rules_) out.headers.push_back({h.name, hex(h.value_sha256)});
  for (const auto& c : allow_ip_)
    out.allow_ip.push_back(c.network.to_string() + "/" + std::to_string(c.prefix));
  return out;
}

access_rules access_rules::from_spec(const proto::access_spec& spec) {
  access_rules out;
  auto bad = [](const char* what) {
    return config_error(std::string("access rules from the agent: malformed ") + what);
  };
  for (const auto& b : spec.basic) {
    basic_credential cred{b.user, b.secret, b.hashed};
    if (!b.hashed) {
      auto d = digest_from_hex(b.secret);
      if (!d) throw bad("basic-auth digest");
      cred.secret.assign(reinterpret_cast<const char*>(d->data()), d->size());
    } else {
      try {
        check_hash(cred.secret, kind_of(cred.secret));
      } catch (const std::exception&) {
        throw bad("basic-auth hash");
      }
    }
    if (cred.user.empty() || cred.user.find(':') != std::string::npos) throw bad("basic-auth user");
    try {
      out.add_basic(std::move(cred));
    } catch (const std::invalid_argument&) {
      throw bad("basic-auth entry");
    }
  }
  for (const auto& t : spec.bearer_sha256) {
    auto d = digest_from_hex(t);
    if (!d) throw bad("bearer digest");
    out.bearer_.push_back(*d);
  }
  for (const auto& h : spec.headers) {
    auto d = digest_from_hex(h.value_sha256);
    if (!d || h.name.empty() || !std::all_of(h.name.begin(), h.name.end(), is_token_char))
      throw bad("required header");
    out.header_rules_.push_back({h.name, *d});
  }
  for (const auto& c : spec.allow_ip) out.add_allow_ip(parse_cidr(c));
  return out;
}

bool access_rules::empty() const {
  return basic_.empty() && bearer_.empty() && header_rules_.empty() && allow_ip_.empty();
}

std::uint64_t access_rules::hash_verifications() const {
  return cache_ ? cache_->verifications.load(std::memory_order_relaxed) : 0;
}

void access_rules::set_hash_budget(unsigned per_second) {
  if (cache_) cache_->budget = per_second;
}

std::uint64_t access_rules::hash_budget_refusals() const {
  return cache_ ? cache_->over_budget.load(std::memory_order_relaxed) : 0;
}

bool access_rules::bearer_ok(std::string_view token) const {
  auto d = sha256(token);
  bool ok = false;
  for (const auto& t : bearer_) ok |= same_digest(d, t);  // no early exit
  return ok;
}

bool access_rules::basic_ok(std::string_view authorization, std::string_view credentials) const {
  wiped_string decoded;
  if (!decode_base64(credentials, decoded)) return false;
  auto colon = decoded.s.find(':');
  if (colon == std::string::npos) return false;
  std::string_view user = std::string_view(decoded.s).substr(0, colon);
  std::string_view password = std::string_view(decoded.s).substr(colon + 1);

  auto user_digest = sha256(user);
  auto password_digest = sha256(password);
  bool ok = false;
  bool hashed_candidate = false;
  for (const auto& b : basic_) {
    bool user_ok = same_digest(user_digest, b.user_sha256);
    if (b.cred.hashed) {
      hashed_candidate = hashed_candidate || user_ok;
      continue;
    }
    ok |= user_ok & (CRYPTO_memcmp(password_digest.data(), b.cred.secret.data(),
                                   password_digest.size()) == 0);
  }
  OPENSSL_cleanse(password_digest.data(), password_digest.size());
  if (ok || !hashed_candidate || !cache_) return ok;

  auto key = sha256(authorization);
  if (cache_->find(key)) return true;
  for (const auto& b : basic_) {
    if (!b.cred.hashed || !same_digest(user_digest, b.user_sha256)) continue;
    if (!cache_->take_budget()) {
      cache_->over_budget.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    cache_->verifications.fetch_add(1, std::memory_order_relaxed);
    if (crypt_matches(password, b.cred.secret)) {
      cache_->insert(key);
      return true;
    }
  }
  return false;
}

access_rules::verdict access_rules::check(const bhttp::fields& headers,
                                          const ip::address& visitor) const {
  if (!allow_ip_.empty() && std::none_of(allow_ip_.begin(), allow_ip_.end(),
                                         [&](const cidr& c) { return c.contains(visitor); }))
    return verdict::forbidden_ip;

  for (const auto& rule : header_rules_) {
    bool found = false;
    auto [first, last] = headers.equal_range(rule.name);
    for (auto it = first; it != last; ++it)
      found |= same_digest(sha256(view(it->value())), rule.value_sha256);
    if (!found) return verdict::forbidden_header;
  }

  if (basic_.empty() && bearer_.empty()) return verdict::allow;

  // Split "Scheme credentials"; more than one Authorization header, or an oversized one, counts
  // as none.
  std::string_view scheme, credentials, authorization;
  if (headers.count(bhttp::field::authorization) == 1) {
    authorization = view(headers.find(bhttp::field::authorization)->value());
    if (authorization.size() <= max_authorization_size) {
      std::string_view value = trim(authorization);
      auto space = value.find_first_of(" \t");
      if (space != std::string_view::npos) {
        scheme = value.substr(0, space);
        credentials = trim(value.substr(space));
      }
    }
  }
  bool tried_basic = !credentials.empty() && iequals(scheme, "basic");
  bool tried_bearer = !credentials.empty() && iequals(scheme, "bearer");

  if (tried_basic && !basic_.empty() && basic_ok(authorization, credentials)) return verdict::allow;
  if (tried_bearer && !bearer_.empty() && bearer_ok(credentials)) return verdict::allow;
  if (basic_.empty() || (!bearer_.empty() && iequals(scheme, "bearer"))) return verdict::bad_bearer;
  return verdict::need_basic;
}

// ---- responses ----

std::string refusal_response(access_rules::verdict v, std::string_view realm) {
  std::string status, challenge, body;
  switch (v) {
    case access_rules::verdict::allow:
      return {};
    case access_rules::verdict::need_basic:
      status = "401 Unauthorized";
      challenge = "Basic realm=\"" + realm_text(realm) + "\", charset=\"UTF-8\"";
      body = "authentication required\n";
      break;
    case access_rules::verdict::bad_bearer:
      status = "401 Unauthorized";
      challenge = "Bearer realm=\"" + realm_text(realm) + "\"";
      body = "authentication required\n";
      break;
    case access_rules::verdict::forbidden_ip:
    case access_rules::verdict::forbidden_header:
      status = "403 Forbidden";
      body = "forbidden\n";
      break;
  }
  std::string out = "HTTP/1.1 " + status + "\r\n";
  if (!challenge.empty()) out += "WWW-Authenticate: " + challenge + "\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

std::string_view describe(access_rules::verdict v) {
  switch (v) {
    case access_rules::verdict::allow:
      return "allowed";
    case access_rules::verdict::need_basic:
      return "missing or wrong credentials";
    case access_rules::verdict::bad_bearer:
      return "missing or wrong bearer token";
    case access_rules::verdict::forbidden_ip:
      return "address not allowed";
    case access_rules::verdict::forbidden_header:
      return "required header missing or wrong";
  }
  return "unknown";
}

}  // namespace burrow::http
