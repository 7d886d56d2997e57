// Requesting, checking and loading share URL certificates.
#include "kinds/share_url/share_cert.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tls/contexts.hpp"

namespace burrow::kinds::share_url {

namespace {

constexpr std::size_t max_pem_file = 256 * 1024;

std::string read_pem_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read the ") + what + " file " + path);
  std::string text(max_pem_file + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_pem_file)
    throw std::runtime_error(std::string("the ") + what + " file " + path + " is over 256 KiB");
  return text;
}

share_cert make(const tls::key_pair& pair) {
  share_cert out;
  out.tls = std::make_shared<boost::asio::ssl::context>(tls::make_web_server_context(pair));
  out.not_after = tls::not_after(pair.cert_pem);
  out.renew_at = renewal_time(pair.cert_pem, std::chrono::system_clock::now());
  return out;
}

}  // namespace

std::chrono::steady_clock::time_point renewal_time(const std::string& cert_pem,
                                                   std::chrono::system_clock::time_point issued) {
  auto from = std::max(tls::not_before(cert_pem), issued);
  auto left = from + (tls::not_after(cert_pem) - from) * 2 / 3 - std::chrono::system_clock::now();
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::max(left, decltype(left)::zero()));
}

void check_share_cert(const tls::key_pair& pair, std::string_view host) {
  if (!tls::key_matches(pair)) throw std::runtime_error("it is not for this agent's key");
  auto names = tls::subject_alt_names(pair.cert_pem);
  if (std::find(names.begin(), names.end(), host) == names.end())
    throw std::runtime_error("it does not name " + std::string(host));
  if (tls::not_after(pair.cert_pem) <= std::chrono::system_clock::now())
    throw std::runtime_error("it has already expired");
}

std::string share_url_host(std::string_view url) {
  constexpr std::string_view scheme = "https://";
  if (!url.starts_with(scheme)) return {};
  url.remove_prefix(scheme.size());
  auto colon = url.find(':');
  if (colon != std::string_view::npos) url = url.substr(0, colon);
  return std::string(url);
}

proto::cert_request make_share_cert_request(const std::string& name, const tls::key_pair& key) {
  return {name, tls::make_csr(key.key_pem, name)};
}

share_cert accept_share_cert(const proto::certificate& answer, const tls::key_pair& key,
                             std::string_view host) {
  if (!answer.ok)
    throw std::runtime_error("the relay refused the certificate: " + answer.message + " (" +
                             answer.code + ")");
  tls::key_pair pair{answer.cert, key.key_pem};
  try {
    check_share_cert(pair, host);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the relay's certificate: ") + e.what());
  }
  if (!answer.ca.empty() && !tls::signed_by(answer.cert, answer.ca))
    throw std::runtime_error("the relay's certificate is not signed by the CA it sent");
  return make(pair);
}

share_cert load_share_cert(const std::string& cert_file, const std::string& key_file) {
  tls::key_pair pair{read_pem_file(cert_file, "certificate"), read_pem_file(key_file, "key")};
  try {
    if (!tls::key_matches(pair))
      throw std::runtime_error("the key in " + key_file + " does not belong to the certificate");
    return make(pair);
  } catch (const std::exception& e) {
    throw std::runtime_error(cert_file + ", " + key_file + ": " + e.what());
  }
}

}  // namespace burrow::kinds::share_url
