// Creates and reloads the relay's CA, server certificate and agent token.
#include "relay/state_dir.hpp"

#include "core/secret.hpp"
#include "core/state_path.hpp"

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace burrow::relay {
namespace {

namespace fs = std::filesystem;

constexpr auto ca_validity = std::chrono::hours(24 * 3650);
// Agents pin the relay's certificate like an SSH host key, so it lives as long as the CA and is
// re-issued only when its names change (or, a decade on, when it nears expiry).
constexpr auto server_validity = std::chrono::hours(24 * 3650);
constexpr auto reissue_margin = std::chrono::hours(24 * 30);

struct san_set {
  std::vector<std::string> dns;
  std::vector<std::string> ips;  // canonical text, as subject_alt_names reports it
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

san_set classify(const std::vector<std::string>& names) {
  san_set out;
  auto add = [](std::vector<std::string>& v, std::string s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
  };
  for (const auto& name : names) {
    if (name.empty()) continue;
    boost::system::error_code ec;
    auto addr = boost::asio::ip::make_address(name, ec);
    if (!ec && addr.is_v6()) {
      auto v6 = addr.to_v6();
      v6.scope_id(0);  // a zone is local to this host and has no place in a certificate
      add(out.ips, v6.to_string());
    } else if (!ec) {
      add(out.ips, addr.to_string());
    } else
      add(out.dns, lower(name));
  }
  add(out.dns, "localhost");
  add(out.ips, "127.0.0.1");
  add(out.ips, "::1");
  return out;
}

// A server certificate is kept only if it still fits: signed by this CA, matching its key,
// covering every wanted name and not close to expiry.
bool server_usable(const tls::key_pair& server, const tls::key_pair& ca, const san_set& wanted) {
  // A first start has none yet: said without an exception, whose unwinding would bring the
  // unwind tables into memory for the rest of the relay's life.
  if (server.cert_pem.empty() || server.key_pem.empty()) return false;
  try {
    if (!tls::signed_by(server.cert_pem, ca.cert_pem) || !tls::key_matches(server)) return false;
    if (tls::not_after(server.cert_pem) - std::chrono::system_clock::now() < reissue_margin)
      return false;
    std::vector<std::string> have;
    for (auto& n : tls::subject_alt_names(server.cert_pem)) have.push_back(lower(n));
    auto covered = [&](const std::vector<std::string>& v) {
      return std::all_of(v.begin(), v.end(), [&](const std::string& n) {
        return std::find(have.begin(), have.end(), n) != have.end();
      });
    };
    return covered(wanted.dns) && covered(wanted.ips);
  } catch (const std::exception&) {
    return false;  // unreadable: it is derived state, so issue a fresh one
  }
}

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && space(s.back())) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && space(s[start])) ++start;
  return s.substr(start);
}

}  // namespace

relay_state load_or_create_state(const fs::path& dir, const std::vector<std::string>& names) {
  relay_state state;
  state.dir = dir;
  if (!fs::exists(dir)) {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  }

  const auto ca_pem = dir / "ca.pem", ca_key = dir / "ca.key";
  const auto server_pem = dir / "relay.pem", server_key = dir / "relay.key";
  const auto token_file = dir / "agent.token";

  // The CA is the root agents trust, so an existing but broken one is an error, never replaced.
  if (fs::exists(ca_pem) || fs::exists(ca_key)) {
    state.ca = {read_file(ca_pem), read_file(ca_key)};
    if (!tls::key_matches(state.ca))
      throw std::runtime_error("CA key does not match CA certificate in " + dir.string());
  } else {
    state.ca = tls::make_ca("burrow relay CA", ca_validity);
    write_private_file(ca_key, state.ca.key_pem);
    write_private_file(ca_pem, state.ca.cert_pem);
  }

  auto wanted = classify(names);
  if (fs::exists(server_pem) && fs::exists(server_key))
    state.server = {read_file(server_pem), read_file(server_key)};
  if (!server_usable(state.server, state.ca, wanted)) {
    state.server =
        tls::make_leaf(state.ca, "burrow relay", wanted.dns, wanted.ips, server_validity);
    // Key first: a crash between the two leaves a mismatch that the next start re-issues.
    write_private_file(server_key, state.server.key_pem);
    write_private_file(server_pem, state.server.cert_pem);
  }

  if (fs::exists(token_file)) state.agent_token = trim(read_file(token_file));
  if (state.agent_token.empty()) {
    state.agent_token = random_token();
    write_private_file(token_file, state.agent_token + "\n");
    state.token_created = true;
  }
  return state;
}

fs::path default_state_dir() {
  return burrow::default_state_dir("relay");
}

}  // namespace burrow::relay
