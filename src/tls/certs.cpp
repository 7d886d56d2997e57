// Certificate issuance and inspection with OpenSSL 3: EC P-256 keys, SHA-256 signatures.
#include "tls/certs.hpp"

#include "core/secret.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <array>
#include <climits>
#include <ctime>
#include <stdexcept>

namespace burrow::tls {
namespace {

using bio_ptr = std::unique_ptr<BIO, openssl_deleter<&BIO_free_all>>;
using bn_ptr = std::unique_ptr<BIGNUM, openssl_deleter<&BN_free>>;
using ext_ptr = std::unique_ptr<X509_EXTENSION, openssl_deleter<&X509_EXTENSION_free>>;
using general_name_ptr = std::unique_ptr<GENERAL_NAME, openssl_deleter<&GENERAL_NAME_free>>;
using asn1_string_ptr = std::unique_ptr<ASN1_STRING, openssl_deleter<&ASN1_STRING_free>>;

bio_ptr memory_bio(std::string_view data) {
  if (data.size() > INT_MAX) throw std::runtime_error("PEM input too large");
  bio_ptr bio(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
  if (!bio) throw_openssl_error("BIO_new_mem_buf failed");
  return bio;
}

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(len));
}

// Never prompt on the terminal for a passphrase: encrypted keys are simply refused.
int no_passphrase(char*, int, int, void*) {
  return 0;
}

evp_pkey_ptr new_ec_key() {
  evp_pkey_ptr key(EVP_EC_gen("P-256"));
  if (!key) throw_openssl_error("EC P-256 key generation failed");
  return key;
}

void set_random_serial(X509* x) {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    throw_openssl_error("RAND_bytes failed");
  bytes[0] &= 0x7f;   // keeps the DER INTEGER positive and within 16 bytes
  bytes[15] |= 0x01;  // never zero
  bn_ptr bn(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x)))
    throw_openssl_error("cannot set certificate serial");
}

void set_validity(X509* x, std::chrono::seconds validity) {
  if (validity.count() <= 0) throw std::invalid_argument("certificate validity must be positive");
  std::time_t now = std::time(nullptr);
  // Backdated an hour so peers with slightly slow clocks accept a fresh certificate.
  long days = static_cast<long>(validity.count() / 86400);
  long seconds = static_cast<long>(validity.count() % 86400);
  if (!ASN1_TIME_adj(X509_getm_notBefore(x), now, 0, -3600) ||
      !ASN1_TIME_adj(X509_getm_notAfter(x), now, static_cast<int>(days), seconds))
    throw_openssl_error("cannot set certificate validity");
}

void set_common_name(X509* x, std::string_view common_name) {
  X509_NAME* name = X509_get_subject_name(x);
  if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.data()),
                                  static_cast<int>(common_name.size()), -1, 0))
    throw_openssl_error("cannot set common name '" + std::string(common_name) + "'");
}

void add_ext(X509* x, X509V3_CTX* ctx, int nid, const char* value) {
  ext_ptr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
  if (!ext || !X509_add_ext(x, ext.get(), -1))
    throw_openssl_error(std::string("cannot add extension ") + OBJ_nid2sn(nid));
}

void push_name(GENERAL_NAMES* names, int type, asn1_string_ptr value) {
  general_name_ptr name(GENERAL_NAME_new());
  if (!name) throw_openssl_error("GENERAL_NAME_new failed");
  GENERAL_NAME_set0_value(name.get(), type, value.release());
  if (!sk_GENERAL_NAME_push(names, name.get())) throw_openssl_error("cannot add SAN entry");
  name.release();
}

void add_subject_alt_names(X509* x, const std::vector<std::string>& dns_names,
                           const std::vector<std::string>& ip_addresses) {
  if (dns_names.empty() && ip_addresses.empty()) return;
  general_names_ptr names(sk_GENERAL_NAME_new_null());
  if (!names) throw_openssl_error("cannot allocate SAN list");
  for (const auto& dns : dns_names) {
    // A dNSName is an IA5String: non-empty printable ASCII.
    bool ok = !dns.empty();
    for (unsigned char c : dns) ok = ok && c > 0x20 && c < 0x7f;
    if (!ok) throw std::invalid_argument("invalid DNS name for certificate: '" + dns + "'");
    asn1_string_ptr value(ASN1_IA5STRING_new());
    if (!value || !ASN1_STRING_set(value.get(), dns.data(), static_cast<int>(dns.size())))
      throw_openssl_error("cannot encode DNS name");
    push_name(names.get(), GEN_DNS, std::move(value));
  }
  for (const auto& ip : ip_addresses) {
    asn1_string_ptr value(a2i_IPADDRESS(ip.c_str()));
    if (!value) {
      ERR_clear_error();
      throw std::invalid_argument("invalid IP address for certificate: '" + ip + "'");
    }
    push_name(names.get(), GEN_IPADD, std::move(value));
  }
  if (!X509_add1_ext_i2d(x, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT))
    throw_openssl_error("cannot add subjectAltName");
}

struct leaf_names {
  const std::vector<std::string>& dns;
  const std::vector<std::string>& ips;
};

// Builds and signs one certificate. With no issuer it is self-signed. With a `subject_key` the
// certificate is for that public key and the returned key_pem is empty; otherwise a new key is
// made.
key_pair issue(std::string_view common_name, std::chrono::seconds validity, bool is_ca,
               const leaf_names* names, X509* issuer_cert, EVP_PKEY* issuer_key,
               EVP_PKEY* subject_key = nullptr) {
  evp_pkey_ptr own_key;
  if (!subject_key) own_key = new_ec_key();
  EVP_PKEY* key_raw = subject_key ? subject_key : own_key.get();
  x509_ptr x(X509_new());
  if (!x || !X509_set_version(x.get(), X509_VERSION_3)) throw_openssl_error("X509_new failed");
  set_random_serial(x.get());
  set_validity(x.get(), validity);
  set_common_name(x.get(), common_name);
  X509_NAME* issuer_name =
      issuer_cert ? X509_get_subject_name(issuer_cert) : X509_get_subject_name(x.get());
  if (!X509_set_issuer_name(x.get(), issuer_name) || !X509_set_pubkey(x.get(), key_raw))
    throw_openssl_error("cannot set issuer or public key");

  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer_cert ? issuer_cert : x.get(), x.get(), nullptr, nullptr, 0);
  if (is_ca) {
    add_ext(x.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(x.get(), &ctx, NID_subject_key_identifier, "hash");
  } else {
    add_ext(x.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(x.get(), &ctx, NID_key_usage, "critical,digitalSignature");
    add_ext(x.get(), &ctx, NID_ext_key_usage, "serverAuth,clientAuth");
    add_ext(x.get(), &ctx, NID_subject_key_identifier, "hash");
    if (issuer_cert) add_ext(x.get(), &ctx, NID_authority_key_identifier, "keyid:always");
    if (names) add_subject_alt_names(x.get(), names->dns, names->ips);
  }

  if (X509_sign(x.get(), issuer_key ? issuer_key : key_raw, EVP_sha256()) <= 0)
    throw_openssl_error("certificate signing failed");

  bio_ptr cert_out(BIO_new(BIO_s_mem()));
  if (!cert_out || !PEM_write_bio_X509(cert_out.get(), x.get()))
    throw_openssl_error("cannot write PEM");
  if (!own_key) return {bio_contents(cert_out.get()), {}};
  bio_ptr key_out(BIO_new(BIO_s_mem()));
  if (!key_out ||
      !PEM_write_bio_PrivateKey(key_out.get(), key_raw, nullptr, nullptr, 0, nullptr, nullptr))
    throw_openssl_error("cannot write PEM");
  return {bio_contents(cert_out.get()), bio_contents(key_out.get())};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void throw_openssl_error(std::string_view what) {
  char buf[256] = "unknown OpenSSL error";
  if (unsigned long code = ERR_peek_last_error(); code != 0)
    ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  throw std::runtime_error(std::string(what) + ": " + buf);
}

general_names_ptr dns_general_names(std::string_view dns_name) {
  general_names_ptr names(sk_GENERAL_NAME_new_null());
  if (!names) throw_openssl_error("cannot allocate SAN list");
  asn1_string_ptr value(ASN1_IA5STRING_new());
  if (!value || !ASN1_STRING_set(value.get(), dns_name.data(), static_cast<int>(dns_name.size())))
    throw_openssl_error("cannot encode DNS name");
  push_name(names.get(), GEN_DNS, std::move(value));
  return names;
}

key_pair make_ca(std::string_view common_name, std::chrono::hours validity) {
  return issue(common_name, validity, true, nullptr, nullptr, nullptr);
}

key_pair make_leaf(const key_pair& ca, std::string_view common_name,
                   const std::vector<std::string>& dns_names,
                   const std::vector<std::string>& ip_addresses, std::chrono::hours validity) {
  auto ca_cert = parse_certificate(ca.cert_pem);
  auto ca_key = parse_private_key(ca.key_pem);
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    throw std::runtime_error("CA private key does not match the CA certificate");
  }
  leaf_names names{dns_names, ip_addresses};
  return issue(common_name, validity, false, &names, ca_cert.get(), ca_key.get());
}

std::string make_csr(std::string_view key_pem, std::string_view common_name) {
  auto key = parse_private_key(key_pem);
  using req_ptr = std::unique_ptr<X509_REQ, openssl_deleter<&X509_REQ_free>>;
  req_ptr req(X509_REQ_new());
  if (!req || !X509_REQ_set_version(req.get(), 0) ||
      !X509_NAME_add_entry_by_txt(X509_REQ_get_subject_name(req.get()), "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.data()),
                                  static_cast<int>(common_name.size()), -1, 0) ||
      !X509_REQ_set_pubkey(req.get(), key.get()) ||
      X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0)
    throw_openssl_error("cannot make a certificate request");
  bio_ptr out(BIO_new(BIO_s_mem()));
  if (!out || !PEM_write_bio_X509_REQ(out.get(), req.get()))
    throw_openssl_error("cannot write PEM");
  return bio_contents(out.get());
}

std::string sign_csr(const key_pair& ca, std::string_view csr_pem, std::string_view dns_name,
                     std::chrono::seconds validity) {
  if (csr_pem.size() > max_csr_size) throw std::runtime_error("certificate request too large");
  auto bio = memory_bio(csr_pem);
  using req_ptr = std::unique_ptr<X509_REQ, openssl_deleter<&X509_REQ_free>>;
  req_ptr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, no_passphrase, nullptr));
  if (!req) throw_openssl_error("cannot parse the certificate request");
  EVP_PKEY* requested = X509_REQ_get0_pubkey(req.get());
  if (!requested || X509_REQ_verify(req.get(), requested) != 1) {
    ERR_clear_error();
    throw std::runtime_error("the certificate request's signature does not verify");
  }
  // Only keys this house would make itself: EC P-256 or RSA of at least 2048 bits.
  bool acceptable = false;
  if (EVP_PKEY_is_a(requested, "EC")) {
    char group[32] = {};
    acceptable =
        EVP_PKEY_get_utf8_string_param(requested, "group", group, sizeof group, nullptr) == 1 &&
        std::string_view(group) == "prime256v1";
  } else if (EVP_PKEY_is_a(requested, "RSA")) {
    acceptable = EVP_PKEY_get_bits(requested) >= 2048;
  }
  ERR_clear_error();
  if (!acceptable) throw std::runtime_error("the certificate request's key is not EC P-256 or RSA");
  auto ca_cert = parse_certificate(ca.cert_pem);
  auto ca_key = parse_private_key(ca.key_pem);
  const std::vector<std::string> dns{std::string(dns_name)};
  const std::vector<std::string> no_ips;
  leaf_names names{dns, no_ips};
  return issue(dns_name, validity, false, &names, ca_cert.get(), ca_key.get(), requested).cert_pem;
}

key_pair make_self_signed(std::string_view common_name, const std::vector<std::string>& dns_names,
                          std::chrono::hours validity) {
  const std::vector<std::string> no_ips;
  leaf_names names{dns_names, no_ips};
  return issue(common_name, validity, false, &names, nullptr, nullptr);
}

std::string fingerprint_sha256(std::string_view cert_pem) {
  auto cert = parse_certificate(cert_pem);
  return fingerprint_sha256(cert.get());
}

std::string fingerprint_sha256(X509* cert) {
  if (!cert) throw std::invalid_argument("fingerprint_sha256: null certificate");
  std::array<std::uint8_t, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (X509_digest(cert, EVP_sha256(), md.data(), &len) != 1 || len != 32)
    throw_openssl_error("certificate digest failed");
  return "sha256:" + hex(std::span<const std::uint8_t>(md.data(), len));
}

std::optional<std::string> normalize_fingerprint(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  constexpr std::string_view prefix = "sha256:";
  if (text.size() >= prefix.size()) {
    bool has_prefix = true;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
      char c = text[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      has_prefix = has_prefix && c == prefix[i];
    }
    if (has_prefix) text.remove_prefix(prefix.size());
  }
  std::string digits;
  digits.reserve(64);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (int v = hex_value(c); v >= 0) {
      if (digits.size() == 64) return std::nullopt;
      digits += "0123456789abcdef"[v];
    } else if (c == ':') {
      // Only between byte pairs: not leading, trailing, doubled or inside a pair.
      if (digits.empty() || digits.size() % 2 != 0 || i + 1 == text.size() || text[i + 1] == ':')
        return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
  if (digits.size() != 64) return std::nullopt;
  return "sha256:" + digits;
}

namespace {

std::chrono::system_clock::time_point certificate_time(std::string_view cert_pem, bool after) {
  auto cert = parse_certificate(cert_pem);
  std::tm tm{};
  const ASN1_TIME* t = after ? X509_get0_notAfter(cert.get()) : X509_get0_notBefore(cert.get());
  if (ASN1_TIME_to_tm(t, &tm) != 1)
    throw_openssl_error(after ? "cannot read certificate notAfter"
                              : "cannot read certificate notBefore");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

std::chrono::system_clock::time_point not_after(std::string_view cert_pem) {
  return certificate_time(cert_pem, true);
}

std::chrono::system_clock::time_point not_before(std::string_view cert_pem) {
  return certificate_time(cert_pem, false);
}

std::vector<std::string> subject_alt_names(std::string_view cert_pem) {
  auto cert = parse_certificate(cert_pem);
  general_names_ptr names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> out;
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const ASN1_IA5STRING* s = name->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<std::size_t>(ASN1_STRING_length(s)));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      int len = ASN1_STRING_length(ip);
      char text[INET6_ADDRSTRLEN] = {};
      int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
      if (family != 0 && inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text))
        out.emplace_back(text);
    }
  }
  return out;
}

x509_ptr parse_certificate(std::string_view pem) {
  auto bio = memory_bio(pem);
  x509_ptr cert(PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr));
  if (!cert) throw_openssl_error("cannot parse PEM certificate");
  return cert;
}

evp_pkey_ptr parse_private_key(std::string_view pem) {
  auto bio = memory_bio(pem);
  evp_pkey_ptr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key) throw_openssl_error("cannot parse PEM private key");
  return key;
}

bool signed_by(std::string_view cert_pem, std::string_view issuer_cert_pem) {
  auto cert = parse_certificate(cert_pem);
  auto issuer = parse_certificate(issuer_cert_pem);
  bool ok = X509_check_issued(issuer.get(), cert.get()) == X509_V_OK &&
            X509_verify(cert.get(), X509_get0_pubkey(issuer.get())) == 1;
  ERR_clear_error();
  return ok;
}

bool key_matches(const key_pair& pair) {
  auto cert = parse_certificate(pair.cert_pem);
  auto key = parse_private_key(pair.key_pem);
  bool ok = X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();
  return ok;
}

}  // namespace burrow::tls
