// Creates, reloads and checks the agent's end-to-end certificate and key.
#include "e2ee/identity.hpp"

#include "core/state_path.hpp"

#include "core/secret.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>

namespace burrow::e2ee {
namespace {

namespace fs = std::filesystem;

constexpr auto validity = std::chrono::hours(24 * 3650);

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found;
}

// A certificate or key that reads and parses, or an error that names the file.
template <class Parse>
std::string read_pem(const fs::path& path, const char* what, Parse parse) {
  std::string pem;
  try {
    pem = read_file(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot read end-to-end ") + what + ": " + e.what());
  }
  try {
    parse(pem);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("end-to-end ") + what + " " + path.string() +
                             " is not usable: " + e.what());
  }
  return pem;
}

tls::key_pair load_pair(const fs::path& cert_path, const fs::path& key_path) {
  tls::key_pair pair;
  pair.cert_pem = read_pem(cert_path, "certificate",
                           [](const std::string& pem) { tls::parse_certificate(pem); });
  pair.key_pem =
      read_pem(key_path, "key", [](const std::string& pem) { tls::parse_private_key(pem); });
  if (!tls::key_matches(pair))
    throw std::runtime_error("end-to-end key " + key_path.string() +
                             " does not belong to certificate " + cert_path.string());
  return pair;
}

}  // namespace

tls::key_pair load_or_create_identity(const fs::path& state_dir) {
  if (!fs::exists(state_dir)) {
    fs::create_directories(state_dir);
    fs::permissions(state_dir, fs::perms::owner_all, fs::perm_options::replace);
  }
  const auto cert_path = state_dir / "e2ee.crt", key_path = state_dir / "e2ee.key";
  const bool have_cert = present(cert_path), have_key = present(key_path);
  // Visitors pin this certificate, so a broken or half-present identity is for the user to fix;
  // replacing it would silently change the fingerprint they trust.
  if (have_cert != have_key) {
    const auto& missing = have_cert ? key_path : cert_path;
    const auto& found = have_cert ? cert_path : key_path;
    throw std::runtime_error("end-to-end identity is incomplete: " + missing.string() +
                             " is missing but " + found.string() +
                             " exists; restore it, or remove both to create a new identity");
  }
  if (have_cert) return load_pair(cert_path, key_path);

  auto pair = tls::make_self_signed("burrow agent", {}, validity);
  // Key first: the certificate's presence marks a complete identity.
  write_private_file(key_path, pair.key_pem);
  write_private_file(cert_path, pair.cert_pem);
  return pair;
}

tls::key_pair load_identity_files(const fs::path& cert_path, const fs::path& key_path) {
  return load_pair(cert_path, key_path);
}

fs::path default_agent_state_dir() {
  return default_state_dir("agent");
}

}  // namespace burrow::e2ee
