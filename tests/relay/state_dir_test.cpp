// The relay's state directory: first start, restart, and certificate re-issue.
#include "relay/state_dir.hpp"

#include "core/secret.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace burrow::relay {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("burrow-state-test-" + random_token().substr(4));
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::perms mode(const fs::path& p) {
  return fs::status(p).permissions() & fs::perms::all;
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(RelayState, FirstCallCreatesEverything) {
  temp_dir tmp;
  auto dir = tmp.path / "relay";  // parent missing too
  auto state = load_or_create_state(dir, {"relay.example.test", "192.0.2.7", "2001:db8::7"});
  EXPECT_EQ(state.dir, dir);
  EXPECT_TRUE(state.token_created);
  EXPECT_EQ(state.agent_token.rfind("brw_", 0), 0u);
  EXPECT_EQ(state.agent_token.size(), 47u);

  EXPECT_EQ(mode(dir), fs::perms::owner_all);
  for (auto name : {"ca.key", "relay.key", "agent.token"})
    EXPECT_EQ(mode(dir / name), fs::perms::owner_read | fs::perms::owner_write) << name;
  EXPECT_EQ(read_file(dir / "ca.pem"), state.ca.cert_pem);
  EXPECT_EQ(read_file(dir / "relay.pem"), state.server.cert_pem);

  EXPECT_TRUE(tls::signed_by(state.server.cert_pem, state.ca.cert_pem));
  auto sans = tls::subject_alt_names(state.server.cert_pem);
  for (auto name :
       {"relay.example.test", "192.0.2.7", "2001:db8::7", "localhost", "127.0.0.1", "::1"})
    EXPECT_TRUE(contains(sans, name)) << name;

  auto now = std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(tls::not_after(state.server.cert_pem) - (now + 24h * 3650)), 1h);
  EXPECT_LT(std::chrono::abs(tls::not_after(state.ca.cert_pem) - (now + 24h * 3650)), 1h);
}

TEST(RelayState, SecondCallReusesState) {
  temp_dir tmp;
  auto first = load_or_create_state(tmp.path, {"relay.example.test"});
  auto second = load_or_create_state(tmp.path, {"relay.example.test"});
  EXPECT_FALSE(second.token_created);
  EXPECT_EQ(second.agent_token, first.agent_token);
  EXPECT_EQ(second.ca.cert_pem, first.ca.cert_pem);
  EXPECT_EQ(second.ca.key_pem, first.ca.key_pem);
  EXPECT_EQ(tls::fingerprint_sha256(second.server.cert_pem),
            tls::fingerprint_sha256(first.server.cert_pem));
  // Names are matched case-insensitively, and the defaults need not be repeated.
  auto third = load_or_create_state(tmp.path, {"RELAY.example.test", "localhost", "::1"});
  EXPECT_EQ(third.server.cert_pem, first.server.cert_pem);
}

TEST(RelayState, NewNameReissuesServerCertificate) {
  temp_dir tmp;
  auto first = load_or_create_state(tmp.path, {"a.example.test"});
  auto second =
      load_or_create_state(tmp.path, {"a.example.test", "b.example.test", "198.51.100.1"});
  EXPECT_NE(tls::fingerprint_sha256(second.server.cert_pem),
            tls::fingerprint_sha256(first.server.cert_pem));
  auto sans = tls::subject_alt_names(second.server.cert_pem);
  EXPECT_TRUE(contains(sans, "a.example.test"));
  EXPECT_TRUE(contains(sans, "b.example.test"));
  EXPECT_TRUE(contains(sans, "198.51.100.1"));
  EXPECT_EQ(second.ca.cert_pem, first.ca.cert_pem);
  EXPECT_EQ(second.agent_token, first.agent_token);
  EXPECT_FALSE(second.token_created);
  EXPECT_TRUE(tls::signed_by(second.server.cert_pem, second.ca.cert_pem));
  EXPECT_EQ(read_file(tmp.path / "relay.pem"), second.server.cert_pem);

  // Dropping a name keeps the certificate: it still covers everything asked for.
  auto third = load_or_create_state(tmp.path, {"b.example.test"});
  EXPECT_EQ(third.server.cert_pem, second.server.cert_pem);
}

TEST(RelayState, ExpiringOrForeignCertificateIsReissued) {
  temp_dir tmp;
  auto first = load_or_create_state(tmp.path, {"relay.example.test"});

  auto expiring = tls::make_leaf(first.ca, "relay", {"relay.example.test", "localhost"},
                                 {"127.0.0.1", "::1"}, 24h * 10);
  write_private_file(tmp.path / "relay.pem", expiring.cert_pem);
  write_private_file(tmp.path / "relay.key", expiring.key_pem);
  auto second = load_or_create_state(tmp.path, {"relay.example.test"});
  EXPECT_NE(second.server.cert_pem, expiring.cert_pem);
  EXPECT_GT(tls::not_after(second.server.cert_pem), std::chrono::system_clock::now() + 24h * 300);

  auto foreign_ca = tls::make_ca("someone else", 24h);
  auto foreign = tls::make_leaf(foreign_ca, "relay", {"relay.example.test", "localhost"},
                                {"127.0.0.1", "::1"}, 24h * 365);
  write_private_file(tmp.path / "relay.pem", foreign.cert_pem);
  write_private_file(tmp.path / "relay.key", foreign.key_pem);
  auto third = load_or_create_state(tmp.path, {"relay.example.test"});
  EXPECT_TRUE(tls::signed_by(third.server.cert_pem, first.ca.cert_pem));
}

TEST(RelayState, BrokenCaIsAnErrorNotReplaced) {
  temp_dir tmp;
  auto first = load_or_create_state(tmp.path, {});
  write_private_file(tmp.path / "ca.key", tls::make_ca("other", 24h).key_pem);
  EXPECT_THROW(load_or_create_state(tmp.path, {}), std::runtime_error);
  std::filesystem::remove(tmp.path / "ca.key");
  EXPECT_THROW(load_or_create_state(tmp.path, {}), std::runtime_error);
  EXPECT_EQ(read_file(tmp.path / "ca.pem"), first.ca.cert_pem);
}

// Sets or unsets an environment variable for one scope.
struct env_override {
  std::string name;
  std::optional<std::string> saved;
  env_override(std::string n, const char* value) : name(std::move(n)) {
    if (const char* old = std::getenv(name.c_str())) saved = old;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~env_override() {
    if (saved)
      ::setenv(name.c_str(), saved->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TEST(RelayState, DefaultStateDirFollowsXdgThenHome) {
  {
    env_override xdg("XDG_STATE_HOME", "/xdg/state");
    env_override home("HOME", "/home/u");
    EXPECT_EQ(default_state_dir(), fs::path("/xdg/state/burrow/relay"));
  }
  {
    env_override xdg("XDG_STATE_HOME", nullptr);
    env_override home("HOME", "/home/u");
    EXPECT_EQ(default_state_dir(), fs::path("/home/u/.local/state/burrow/relay"));
  }
  {
    env_override xdg("XDG_STATE_HOME", "relative");  // invalid per XDG: ignored
    env_override home(std::string("HOME"), nullptr);
    EXPECT_EQ(default_state_dir(), fs::path(".burrow-relay"));
  }
}

}  // namespace
}  // namespace burrow::relay
