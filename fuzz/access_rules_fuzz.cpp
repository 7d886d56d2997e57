// libFuzzer target: share URL access rules (--basic-auth, --bearer, --require-header, --allow-ip).
// The first byte picks what the rest is:
//   even: a visitor's address (4 or 16 bytes, by the second byte) and then a request head, parsed
//         as the agent and the relay parse it and checked against fixed rules. check() must never
//         crash, must allow only a request from an allowed network that carries the required
//         header and one of the two credentials, and must allow the plain form of either;
//   odd: a rule as given on the command line, parsed as each kind and as each field of the rules
//        an agent sends an inspect-mode relay. What parses must come back the same through
//        to_spec() and from_spec(), and a network must contain its own address.
#include <algorithm>
#include <string>
#include <string_view>

#include "core/config_file.hpp"
#include "fuzz_check.hpp"
#include "http/access_rules.hpp"
#include "http/forward_head.hpp"

namespace {

using namespace burrow::http;
namespace ip = boost::asio::ip;
namespace bhttp = boost::beast::http;

constexpr std::string_view basic_value = "Basic YWxpY2U6c2VjcmV0";  // alice:secret
constexpr std::string_view bearer_token = "tok3n-tok3n";

using burrow::fuzz::check;

const access_rules& fixed_rules() {
  static const access_rules rules = [] {
    access_rules r;
    r.add_basic(parse_basic_auth("alice:secret"));
    r.add_bearer(bearer_token);
    r.add_header(parse_required_header("X-Key: k3y"));
    r.add_allow_ip(parse_cidr("10.0.0.0/8"));
    r.add_allow_ip(parse_cidr("2001:db8::/32"));
    return r;
  }();
  return rules;
}

bool allowed_network(const ip::address& a) {
  if (a.is_v4()) return a.to_v4().to_bytes()[0] == 10;
  auto b = a.to_v6().to_bytes();
  if (a.to_v6().is_v4_mapped()) return b[12] == 10;
  return b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8;
}

// Lines in a response's head; npos when it has no end.
std::size_t head_lines(const std::string& response) {
  auto end = response.find("\r\n\r\n");
  if (end == std::string::npos) return std::string::npos;
  return static_cast<std::size_t>(std::count(response.begin(), response.begin() + end, '\n'));
}

std::string_view view(boost::beast::string_view s) {
  return {s.data(), s.size()};
}

void check_request(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  bool v6 = data[0] & 1;
  std::size_t n = v6 ? 16 : 4;
  if (size < 1 + n) return;
  ip::address visitor;
  if (v6) {
    ip::address_v6::bytes_type b;
    std::copy(data + 1, data + 17, b.begin());
    visitor = ip::address_v6(b);
  } else {
    visitor = ip::address_v4({data[1], data[2], data[3], data[4]});
  }
  std::string_view head(reinterpret_cast<const char*>(data + 1 + n), size - 1 - n);
  auto parsed = parse_request_head(head);
  if (!parsed) return;
  auto verdict = fixed_rules().check(*parsed, visitor);

  bool key = false;
  auto [first, last] = parsed->equal_range("X-Key");
  for (auto it = first; it != last; ++it) key |= view(it->value()) == "k3y";
  std::string_view authorization;
  if (parsed->count(bhttp::field::authorization) == 1)
    authorization = view(parsed->find(bhttp::field::authorization)->value());
  bool credential = authorization.find("YWxpY2U6c2VjcmV0") != std::string_view::npos ||
                    authorization.find(bearer_token) != std::string_view::npos;
  bool plain =
      authorization == basic_value || authorization == "Bearer " + std::string(bearer_token);
  bool network = allowed_network(visitor);

  if (verdict == access_rules::verdict::allow)
    check(network && key && credential, "allowed a request that breaks a rule");
  if (network && key && plain)
    check(verdict == access_rules::verdict::allow, "refused a request that keeps every rule");
  if (!network) check(verdict == access_rules::verdict::forbidden_ip, "let a foreign network by");
  if (verdict != access_rules::verdict::allow) {
    auto response = refusal_response(verdict, head.substr(0, 300));
    check(head_lines(response) == head_lines(refusal_response(verdict, "x")),
          "the realm changed the refusal's head");
  }
}

// A bcrypt cost or SHA-512 rounds that would make one input take seconds: the rules accept
// up to bcrypt 14 and 500,000 rounds, so such an input is slow, not wrong.
bool costly(std::string_view secret) {
  if (secret.starts_with("$2") && secret.size() >= 6) return secret.substr(4, 2) > "05";
  if (auto r = secret.find("rounds="); r != std::string_view::npos) {
    std::string_view rest = secret.substr(r + 7);
    return rest.substr(0, rest.find_first_not_of("0123456789")).size() > 4;
  }
  return false;
}

bool too_costly(std::string_view spec) {
  auto colon = spec.find(':');
  return costly(spec) || (colon != std::string_view::npos && costly(spec.substr(colon + 1)));
}

template <class F>
void may_refuse(F&& f) {
  try {
    f();
  } catch (const burrow::config_error&) {
  }
}

void check_specs(std::string_view spec) {
  if (too_costly(spec)) return;
  access_rules rules;
  may_refuse([&] {
    auto cred = parse_basic_auth(spec);
    check(!cred.user.empty(), "a credential without a user");
    check(cred.hashed || cred.secret.size() == 32, "a password kept other than as its digest");
    rules.add_basic(std::move(cred));
  });
  may_refuse([&] {
    auto h = parse_required_header(spec);
    check(!h.name.empty() && !h.value.empty(), "an empty header rule");
    check(h.value.find_first_of("\r\n") == std::string::npos, "a header value with a line break");
    rules.add_header(std::move(h));
  });
  may_refuse([&] {
    auto c = parse_cidr(spec);
    // A visitor's IPv4-mapped address is matched as IPv4, so a v6 network whose own address is
    // one (a prefix under 96 over ::ffff:0:0) holds no visitor: as documented.
    bool mapped = c.network.is_v6() && c.network.to_v6().is_v4_mapped();
    check(mapped || c.contains(c.network), "a network without its own address");
    auto again = parse_cidr(c.network.to_string() + "/" + std::to_string(c.prefix));
    check(again.network == c.network && again.prefix == c.prefix, "a network read back differs");
    rules.add_allow_ip(c);
  });
  may_refuse([&] { rules.add_bearer(spec); });

  // What an agent sends an inspect-mode relay must come back as the same rules.
  auto sent = rules.to_spec();
  auto back = access_rules::from_spec(sent).to_spec();
  check(back.basic.size() == sent.basic.size() && back.headers.size() == sent.headers.size() &&
            back.bearer_sha256 == sent.bearer_sha256 && back.allow_ip == sent.allow_ip,
        "rules changed on their way to the relay");

  // The same text in each field of rules from an agent, one field at a time.
  std::string text(spec);
  burrow::proto::access_spec one;
  one.basic.push_back({text, text, false});
  may_refuse([&] { (void)access_rules::from_spec(one); });
  one.basic = {{"alice", text, true}};
  may_refuse([&] { (void)access_rules::from_spec(one); });
  one = {};
  one.bearer_sha256.push_back(text);
  may_refuse([&] { (void)access_rules::from_spec(one); });
  one = {};
  one.headers.push_back({text, text});
  may_refuse([&] { (void)access_rules::from_spec(one); });
  one = {};
  one.allow_ip.push_back(text);
  may_refuse([&] { (void)access_rules::from_spec(one); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 16 * 1024) return 0;
  if (data[0] % 2 == 0)
    check_request(data + 1, size - 1);
  else
    check_specs({reinterpret_cast<const char*>(data + 1), size - 1});
  return 0;
}
