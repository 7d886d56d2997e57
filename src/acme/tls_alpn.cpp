// TLS-ALPN-01 with OpenSSL 3: the ClientHello callback reads SNI and ALPN before the server
// picks a certificate, and swaps in the challenge certificate for this one connection only.
#include "acme/tls_alpn.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>
#include <stdexcept>

#include "core/secret.hpp"

namespace burrow::acme {
namespace {

using bio_ptr = std::unique_ptr<BIO, tls::openssl_deleter<&BIO_free_all>>;
using bn_ptr = std::unique_ptr<BIGNUM, tls::openssl_deleter<&BN_free>>;
using ext_ptr = std::unique_ptr<X509_EXTENSION, tls::openssl_deleter<&X509_EXTENSION_free>>;
using object_ptr = std::unique_ptr<ASN1_OBJECT, tls::openssl_deleter<&ASN1_OBJECT_free>>;
using octets_ptr =
    std::unique_ptr<ASN1_OCTET_STRING, tls::openssl_deleter<&ASN1_OCTET_STRING_free>>;

constexpr const char* acme_identifier_oid = "1.3.6.1.5.5.7.1.31";

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string pem_of(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(len));
}

void set_serial_and_validity(X509* x) {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    tls::throw_openssl_error("RAND_bytes failed");
  bytes[0] &= 0x7f;
  bytes[15] |= 0x01;
  bn_ptr bn(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
  // Validators ignore the dates; a week, backdated an hour, covers any validation's life.
  std::time_t now = std::time(nullptr);
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x)) ||
      !ASN1_TIME_adj(X509_getm_notBefore(x), now, 0, -3600) ||
      !ASN1_TIME_adj(X509_getm_notAfter(x), now, 7, 0))
    tls::throw_openssl_error("cannot set serial and validity");
}

void add_dns_name(X509* x, std::string_view domain) {
  auto names = tls::dns_general_names(domain);
  if (!X509_add1_ext_i2d(x, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT))
    tls::throw_openssl_error("cannot add subjectAltName");
}

// extnValue is the DER of an OCTET STRING holding the digest (RFC 8737 section 3).
void add_acme_identifier(X509* x, std::string_view key_authorization) {
  auto digest = sha256(key_authorization);
  octets_ptr inner(ASN1_OCTET_STRING_new());
  if (!inner || !ASN1_OCTET_STRING_set(inner.get(), digest.data(), digest.size()))
    tls::throw_openssl_error("cannot encode acmeIdentifier");
  unsigned char* der = nullptr;
  int der_len = i2d_ASN1_OCTET_STRING(inner.get(), &der);
  if (der_len <= 0) tls::throw_openssl_error("cannot encode acmeIdentifier");
  octets_ptr value(ASN1_OCTET_STRING_new());
  bool set = value && ASN1_OCTET_STRING_set(value.get(), der, der_len);
  OPENSSL_free(der);
  object_ptr oid(OBJ_txt2obj(acme_identifier_oid, 1));
  if (!set || !oid) tls::throw_openssl_error("cannot encode acmeIdentifier");
  ext_ptr ext(X509_EXTENSION_create_by_OBJ(nullptr, oid.get(), 1, value.get()));
  if (!ext || !X509_add_ext(x, ext.get(), -1))
    tls::throw_openssl_error("cannot add acmeIdentifier");
}

// What enable_tls_alpn_01 attaches to a context; freed with it.
struct context_state {
  std::shared_ptr<challenge_store> store;
  std::string fallback_wire;  // ALPN wire format: length byte, name, ...
};

void free_state(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<context_state*>(ptr);
}

int ctx_state_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_state);
  return index;
}

// Set on a connection whose ClientHello got the challenge certificate.
int ssl_answered_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}
char answered_marker;

std::string_view as_view(const unsigned char* p, std::size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

// The ALPN extension body: a 2-byte length, then length-prefixed names.
bool alpn_list_has(std::string_view body, std::string_view wanted) {
  if (body.size() < 2) return false;
  std::size_t list =
      (static_cast<unsigned char>(body[0]) << 8) | static_cast<unsigned char>(body[1]);
  if (list != body.size() - 2) return false;
  for (std::size_t i = 2; i < body.size();) {
    std::size_t n = static_cast<unsigned char>(body[i++]);
    if (n == 0 || i + n > body.size()) return false;
    if (body.substr(i, n) == wanted) return true;
    i += n;
  }
  return false;
}

// The server_name extension body: a 2-byte list length, then (type, 2-byte length, name).
std::string host_name(std::string_view body) {
  if (body.size() < 2) return {};
  std::size_t list =
      (static_cast<unsigned char>(body[0]) << 8) | static_cast<unsigned char>(body[1]);
  if (list != body.size() - 2) return {};
  for (std::size_t i = 2; i + 3 <= body.size();) {
    auto type = static_cast<unsigned char>(body[i]);
    std::size_t n =
        (static_cast<unsigned char>(body[i + 1]) << 8) | static_cast<unsigned char>(body[i + 2]);
    i += 3;
    if (i + n > body.size()) return {};
    if (type == TLSEXT_NAMETYPE_host_name) return lowercase(body.substr(i, n));
    i += n;
  }
  return {};
}

int on_client_hello(SSL* ssl, int* alert, void* arg) {
  const auto* state = static_cast<const context_state*>(arg);
  const unsigned char* body = nullptr;
  std::size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &body,
                                &len) != 1 ||
      !alpn_list_has(as_view(body, len), acme_tls_1))
    return SSL_CLIENT_HELLO_SUCCESS;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &body, &len) != 1)
    return SSL_CLIENT_HELLO_SUCCESS;
  try {
    auto challenge = state->store->find(host_name(as_view(body, len)));
    if (!challenge) return SSL_CLIENT_HELLO_SUCCESS;  // not ours to answer: as before
    // Only the challenge certificate, so no other key type's certificate can be chosen.
    SSL_certs_clear(ssl);
    if (SSL_use_cert_and_key(ssl, challenge->cert.get(), challenge->key.get(), nullptr, 1) != 1 ||
        SSL_set_ex_data(ssl, ssl_answered_index(), &answered_marker) != 1) {
      ERR_clear_error();
      *alert = SSL_AD_INTERNAL_ERROR;
      return SSL_CLIENT_HELLO_ERROR;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
  } catch (const std::exception&) {
    *alert = SSL_AD_INTERNAL_ERROR;  // nothing may escape into OpenSSL's C frames
    return SSL_CLIENT_HELLO_ERROR;
  }
}

int select_alpn(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
  const auto* state = static_cast<const context_state*>(arg);
  if (SSL_get_ex_data(ssl, ssl_answered_index()) != nullptr) {
    // Point into the client's list, which OpenSSL keeps until it copies the selection.
    std::string_view list = as_view(in, inlen);
    for (std::size_t i = 0; i < list.size();) {
      std::size_t n = static_cast<unsigned char>(list[i++]);
      if (i + n > list.size()) break;
      if (list.substr(i, n) == acme_tls_1) {
        *out = in + i;
        *outlen = static_cast<unsigned char>(n);
        return SSL_TLSEXT_ERR_OK;
      }
      i += n;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen,
                            reinterpret_cast<const unsigned char*>(state->fallback_wire.data()),
                            static_cast<unsigned int>(state->fallback_wire.size()), in,
                            inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // sent as no_application_protocol
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

tls::key_pair make_challenge_certificate(std::string_view domain,
                                         std::string_view key_authorization) {
  bool printable = !domain.empty() && domain.size() <= 253;
  for (unsigned char c : domain) printable = printable && c > 0x20 && c < 0x7f;
  if (!printable) throw std::invalid_argument("invalid domain for a TLS-ALPN-01 certificate");
  tls::evp_pkey_ptr key(EVP_EC_gen("P-256"));
  tls::x509_ptr x(X509_new());
  if (!key || !x || !X509_set_version(x.get(), X509_VERSION_3))
    tls::throw_openssl_error("cannot make challenge certificate");
  set_serial_and_validity(x.get());
  X509_NAME* name = X509_get_subject_name(x.get());
  static constexpr unsigned char common_name[] = "ACME TLS-ALPN-01 challenge";
  if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, common_name, -1, -1, 0) ||
      !X509_set_issuer_name(x.get(), name) || !X509_set_pubkey(x.get(), key.get()))
    tls::throw_openssl_error("cannot set challenge certificate names");
  add_dns_name(x.get(), domain);
  add_acme_identifier(x.get(), key_authorization);
  if (X509_sign(x.get(), key.get(), EVP_sha256()) <= 0)
    tls::throw_openssl_error("cannot sign challenge certificate");
  bio_ptr cert_out(BIO_new(BIO_s_mem()));
  bio_ptr key_out(BIO_new(BIO_s_mem()));
  if (!cert_out || !key_out || !PEM_write_bio_X509(cert_out.get(), x.get()) ||
      !PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr))
    tls::throw_openssl_error("cannot write PEM");
  return {pem_of(cert_out.get()), pem_of(key_out.get())};
}

void challenge_store::put(std::string_view domain, const tls::key_pair& challenge) {
  if (!tls::key_matches(challenge))
    throw std::runtime_error("challenge certificate and key do not match");
  auto entry = std::make_shared<identity>();
  entry->cert = tls::parse_certificate(challenge.cert_pem);
  entry->key = tls::parse_private_key(challenge.key_pem);
  std::lock_guard lock(mutex_);
  by_domain_[lowercase(domain)] = std::move(entry);
}

void challenge_store::remove(std::string_view domain) {
  std::lock_guard lock(mutex_);
  by_domain_.erase(lowercase(domain));
}

std::shared_ptr<const challenge_store::identity> challenge_store::find(
    std::string_view domain) const {
  if (domain.empty()) return nullptr;
  std::string key = lowercase(domain);
  std::lock_guard lock(mutex_);
  auto it = by_domain_.find(key);
  return it == by_domain_.end() ? nullptr : it->second;
}

std::size_t challenge_store::size() const {
  std::lock_guard lock(mutex_);
  return by_domain_.size();
}

void enable_tls_alpn_01(SSL_CTX* ctx, std::shared_ptr<challenge_store> store,
                        const std::vector<std::string>& fallback_alpn) {
  if (!ctx || !store) throw std::invalid_argument("enable_tls_alpn_01: null argument");
  auto state = std::make_unique<context_state>();
  state->store = std::move(store);
  for (const auto& p : fallback_alpn) {
    if (p.empty() || p.size() > 255)
      throw std::invalid_argument("ALPN protocol must be 1 to 255 bytes: '" + p + "'");
    state->fallback_wire += static_cast<char>(p.size());
    state->fallback_wire += p;
  }
  auto* previous = static_cast<context_state*>(SSL_CTX_get_ex_data(ctx, ctx_state_index()));
  if (SSL_CTX_set_ex_data(ctx, ctx_state_index(), state.get()) != 1)
    tls::throw_openssl_error("cannot attach the challenge store");
  SSL_CTX_set_client_hello_cb(ctx, on_client_hello, state.get());
  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, state.release());
  delete previous;  // a second call replaces the first; no connection may be in flight
}

bool answered_acme_challenge(const SSL* ssl) {
  if (!ssl || SSL_get_ex_data(ssl, ssl_answered_index()) == nullptr) return false;
  const unsigned char* alpn = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &len);
  return as_view(alpn, len) == acme_tls_1;
}

}  // namespace burrow::acme
