// Problem documents and Retry-After parsed without I/O; the CSR made with OpenSSL 3.
#include "acme/messages.hpp"

#include <openssl/x509v3.h>

#include <boost/json.hpp>
#include <charconv>
#include <climits>
#include <stdexcept>

#include "tls/certs.hpp"

namespace burrow::acme {
namespace {

using req_ptr = std::unique_ptr<X509_REQ, tls::openssl_deleter<&X509_REQ_free>>;
struct extensions_deleter {
  void operator()(STACK_OF(X509_EXTENSION) * s) const {
    sk_X509_EXTENSION_pop_free(s, X509_EXTENSION_free);
  }
};
using extensions_ptr = std::unique_ptr<STACK_OF(X509_EXTENSION), extensions_deleter>;

std::optional<boost::json::object> parse_object(std::string_view body) {
  boost::system::error_code ec;
  auto value = boost::json::parse(body, ec);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.as_object());
}

std::string string_member(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= limit) return out + "...";
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
  }
  return out;
}

std::string problem_type(std::string_view body) {
  auto o = parse_object(body);
  return o ? printable(string_member(*o, "type"), 120) : std::string();
}

std::string describe_problem(unsigned status, std::string_view body) {
  std::string out = "HTTP " + std::to_string(status);
  auto o = parse_object(body);
  if (!o) return out;
  std::string type = printable(string_member(*o, "type"), 120);
  std::string detail = printable(string_member(*o, "detail"));
  if (!type.empty()) out += " " + type;
  if (!detail.empty()) out += ": " + detail;
  return out;
}

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 9) return std::nullopt;
  long seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) return std::nullopt;
  return std::chrono::seconds(seconds);
}

std::string make_order_csr(std::string_view key_pem, std::string_view domain) {
  bool printable_name = !domain.empty() && domain.size() <= 253;
  for (unsigned char c : domain) printable_name = printable_name && c > 0x20 && c < 0x7f;
  if (!printable_name) throw std::invalid_argument("invalid domain for a certificate request");
  auto key = tls::parse_private_key(key_pem);
  req_ptr req(X509_REQ_new());
  if (!req || !X509_REQ_set_version(req.get(), 0) || !X509_REQ_set_pubkey(req.get(), key.get()))
    tls::throw_openssl_error("cannot make a certificate request");
  // A CN holds at most 64 characters; the SAN alone names longer domains.
  if (domain.size() <= 64 &&
      !X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req.get()), "CN", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>(domain.data()),
                                  static_cast<int>(domain.size()), -1, 0))
    tls::throw_openssl_error("cannot set the request's common name");

  auto names = tls::dns_general_names(domain);
  STACK_OF(X509_EXTENSION)* raw = nullptr;
  if (X509V3_add1_i2d(&raw, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1)
    tls::throw_openssl_error("cannot encode subjectAltName");
  extensions_ptr extensions(raw);
  if (X509_REQ_add_extensions(req.get(), extensions.get()) != 1 ||
      X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0)
    tls::throw_openssl_error("cannot sign the certificate request");
  unsigned char* der = nullptr;
  int len = i2d_X509_REQ(req.get(), &der);
  if (len <= 0) tls::throw_openssl_error("cannot encode the certificate request");
  std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
  OPENSSL_free(der);
  return out;
}

}  // namespace burrow::acme
