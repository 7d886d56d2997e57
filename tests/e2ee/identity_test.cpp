// The agent's end-to-end identity: created once, reloaded unchanged, never replaced when broken.
#include "e2ee/identity.hpp"

#include "core/secret.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace burrow::e2ee {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("burrow-e2ee-test-" + random_token().substr(4));
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::perms mode(const fs::path& p) {
  return fs::status(p).permissions() & fs::perms::all;
}

// The message of the std::runtime_error `f` throws, or nullopt when it throws none.
template <class F>
std::optional<std::string> error_of(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

TEST(E2eeIdentity, CreatedOnceThenReloadedWithTheSameFingerprint) {
  temp_dir tmp;
  auto dir = tmp.path / "agent";  // parent missing too
  auto first = load_or_create_identity(dir);
  EXPECT_EQ(mode(dir), fs::perms::owner_all);
  for (auto name : {"e2ee.crt", "e2ee.key"})
    EXPECT_EQ(mode(dir / name), fs::perms::owner_read | fs::perms::owner_write) << name;
  EXPECT_TRUE(tls::key_matches(first));
  auto now = std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(tls::not_after(first.cert_pem) - (now + 24h * 3650)), 2h);

  auto second = load_or_create_identity(dir);
  EXPECT_EQ(tls::fingerprint_sha256(second.cert_pem), tls::fingerprint_sha256(first.cert_pem));
  EXPECT_EQ(second.key_pem, first.key_pem);
}

TEST(E2eeIdentity, CorruptCertificateIsRefusedAndKept) {
  temp_dir tmp;
  load_or_create_identity(tmp.path);
  write_private_file(tmp.path / "e2ee.crt", "not a certificate\n");
  auto error = error_of([&] { load_or_create_identity(tmp.path); });
  ASSERT_TRUE(error);
  EXPECT_NE(error->find((tmp.path / "e2ee.crt").string()), std::string::npos) << *error;
  EXPECT_EQ(read_file(tmp.path / "e2ee.crt"), "not a certificate\n");
}

TEST(E2eeIdentity, MissingHalfIsRefusedAndNothingIsCreated) {
  temp_dir tmp;
  load_or_create_identity(tmp.path);
  auto key = read_file(tmp.path / "e2ee.key");
  fs::remove(tmp.path / "e2ee.crt");
  auto error = error_of([&] { load_or_create_identity(tmp.path); });
  ASSERT_TRUE(error);
  EXPECT_NE(error->find((tmp.path / "e2ee.crt").string()), std::string::npos) << *error;
  EXPECT_FALSE(fs::exists(tmp.path / "e2ee.crt"));
  EXPECT_EQ(read_file(tmp.path / "e2ee.key"), key);
}

TEST(E2eeIdentity, UserFilesLoadAndMismatchIsRefused) {
  temp_dir tmp;
  fs::create_directories(tmp.path);
  auto a = tls::make_self_signed("a", {"a.example.test"}, 24h);
  auto b = tls::make_self_signed("b", {}, 24h);
  write_private_file(tmp.path / "a.crt", a.cert_pem);
  write_private_file(tmp.path / "a.key", a.key_pem);
  write_private_file(tmp.path / "b.key", b.key_pem);

  auto loaded = load_identity_files(tmp.path / "a.crt", tmp.path / "a.key");
  EXPECT_EQ(loaded.cert_pem, a.cert_pem);

  auto mismatch = error_of([&] { load_identity_files(tmp.path / "a.crt", tmp.path / "b.key"); });
  ASSERT_TRUE(mismatch);
  EXPECT_NE(mismatch->find("does not belong"), std::string::npos) << *mismatch;
  auto missing = error_of([&] { load_identity_files(tmp.path / "a.crt", tmp.path / "no.key"); });
  ASSERT_TRUE(missing);
  EXPECT_NE(missing->find((tmp.path / "no.key").string()), std::string::npos) << *missing;
  // A key where the certificate should be is named as the unusable certificate.
  auto swapped = error_of([&] { load_identity_files(tmp.path / "a.key", tmp.path / "a.key"); });
  ASSERT_TRUE(swapped);
  EXPECT_NE(swapped->find("certificate " + (tmp.path / "a.key").string()), std::string::npos)
      << *swapped;
}

TEST(E2eeIdentity, DefaultStateDirFollowsXdgThenHome) {
  std::optional<std::string> xdg, home;
  if (const char* v = std::getenv("XDG_STATE_HOME")) xdg = v;
  if (const char* v = std::getenv("HOME")) home = v;

  ::setenv("XDG_STATE_HOME", "/xdg/state", 1);
  EXPECT_EQ(default_agent_state_dir(), fs::path("/xdg/state/burrow/agent"));
  ::setenv("XDG_STATE_HOME", "relative", 1);  // ignored, as XDG says
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_agent_state_dir(), fs::path("/home/someone/.local/state/burrow/agent"));
  ::unsetenv("XDG_STATE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(default_agent_state_dir(), fs::path(".burrow-agent"));

  if (xdg) ::setenv("XDG_STATE_HOME", xdg->c_str(), 1);
  if (home) ::setenv("HOME", home->c_str(), 1);
}

}  // namespace
}  // namespace burrow::e2ee
