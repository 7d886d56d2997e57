// TLS 1.3-only contexts with fixed suites and groups, ALPN, per-connection verification, and
// SSLKEYLOGFILE for debugging.
#include "tls/contexts.hpp"

#include "core/secret.hpp"
#include "tls/cipher_order.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <boost/asio/ip/address.hpp>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

namespace burrow::tls {
namespace {

constexpr const char* groups = "X25519:P-256";
// Servers choose the suite by their own list, except that a client leading with
// ChaCha20-Poly1305 (no AES hardware) gets it: see tls/cipher_order.hpp.
constexpr auto server_choice = SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA;

using x509_store_ptr = std::unique_ptr<X509_STORE, openssl_deleter<&X509_STORE_free>>;
using bio_ptr = std::unique_ptr<BIO, openssl_deleter<&BIO_free_all>>;

// ALPN wire format: each protocol as a length byte followed by its name.
std::string alpn_wire(const std::vector<std::string>& alpn) {
  std::string wire;
  for (const auto& p : alpn) {
    if (p.empty() || p.size() > 255)
      throw std::invalid_argument("ALPN protocol must be 1 to 255 bytes: '" + p + "'");
    wire += static_cast<char>(p.size());
    wire += p;
  }
  return wire;
}

void common_setup(SSL_CTX* ctx) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, tls13_ciphersuites(preferred_aead_order())) != 1 ||
      SSL_CTX_set1_groups_list(ctx, groups) != 1)
    throw_openssl_error("cannot configure TLS 1.3 context");
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
}

// The server's ALPN list lives in SSL_CTX ex_data so it is freed with the context.
void free_alpn(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::string*>(ptr);
}

int ctx_alpn_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_alpn);
  return index;
}

int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
  const auto* wire = static_cast<const std::string*>(arg);
  unsigned char* chosen = nullptr;
  // Server preference order: the first of ours that the client offers.
  if (SSL_select_next_proto(&chosen, outlen, reinterpret_cast<const unsigned char*>(wire->data()),
                            static_cast<unsigned int>(wire->size()), in,
                            inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // sent as no_application_protocol
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

void use_identity(SSL_CTX* ctx, const key_pair& identity) {
  if (identity.cert_pem.size() > INT_MAX) throw std::runtime_error("certificate PEM too large");
  bio_ptr bio(
      BIO_new_mem_buf(identity.cert_pem.data(), static_cast<int>(identity.cert_pem.size())));
  if (!bio) throw_openssl_error("BIO_new_mem_buf failed");
  x509_ptr leaf(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!leaf || SSL_CTX_use_certificate(ctx, leaf.get()) != 1)
    throw_openssl_error("cannot use server certificate");
  // Further certificates in the PEM are the chain sent after the leaf.
  while (x509_ptr extra{PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)}) {
    if (SSL_CTX_add0_chain_cert(ctx, extra.get()) != 1)
      throw_openssl_error("cannot add chain certificate");
    extra.release();
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  auto key = parse_private_key(identity.key_pem);
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1)
    throw_openssl_error("server private key does not match its certificate");
}

int ssl_outcome_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

verification_outcome* outcome_of(X509_STORE_CTX* store) {
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  return ssl ? static_cast<verification_outcome*>(SSL_get_ex_data(ssl, ssl_outcome_index()))
             : nullptr;
}

// Pin mode: the chain is irrelevant; only the leaf's fingerprint decides.
int verify_pin(int, X509_STORE_CTX* store) {
  auto* outcome = outcome_of(store);
  X509* leaf = X509_STORE_CTX_get0_cert(store);
  if (!outcome || !leaf || outcome->expected_pin.empty()) return 0;
  // Checked on every call, not only at depth 0, so no path accepts without comparing the pin.
  try {
    if (outcome->seen_fingerprint.empty()) outcome->seen_fingerprint = fingerprint_sha256(leaf);
    if (constant_time_equal(outcome->seen_fingerprint, outcome->expected_pin)) return 1;
  } catch (const std::exception&) {
    return 0;  // nothing may escape into OpenSSL's C frames
  }
  outcome->pin_mismatch = true;
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

int verify_chain(int preverify_ok, X509_STORE_CTX* store) {
  if (preverify_ok) return 1;
  auto* outcome = outcome_of(store);
  if (outcome && outcome->chain_error.empty()) {
    try {
      outcome->chain_error = X509_verify_cert_error_string(X509_STORE_CTX_get_error(store));
    } catch (const std::exception&) {
      // nothing may escape into OpenSSL's C frames; the handshake fails regardless
    }
  }
  return 0;
}

// An NSS key log file (SSLKEYLOGFILE), shared by every context of the process that names it.
class keylog_file {
 public:
  explicit keylog_file(int fd) : fd_(fd) {}

  // One write(2) per line on an O_APPEND descriptor: nothing is buffered, so the line is in the
  // file for a capture tool at once, and lines from other processes sharing it stay whole.
  void append(const char* line) noexcept {
    try {
      std::string out = line;
      out += '\n';
      std::lock_guard lock(mutex_);
      for (std::size_t done = 0; done < out.size();) {
        const ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
      }
    } catch (...) {
      // A debugging aid must never disturb the connection, nor throw into OpenSSL's C frames.
    }
  }

 private:
  std::mutex mutex_;
  int fd_;
};

// Opened once per path and kept for the life of the process (like the contexts' users, SSL
// callbacks may run on any thread until exit). nullptr records a path that could not be opened,
// so its error is logged once.
keylog_file* open_keylog(const std::string& path) {
  static std::mutex mutex;
  static auto* files = new std::map<std::string, keylog_file*>;
  std::lock_guard lock(mutex);
  if (auto it = files->find(path); it != files->end()) return it->second;
  keylog_file* file = nullptr;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    spdlog::error("SSLKEYLOGFILE: cannot open {}: {}; TLS secrets are not logged", path,
                  std::strerror(errno));
  } else {
    // An existing file may have been created readable by others; these lines decrypt traffic.
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) ::fchmod(fd, 0600);
    file = new keylog_file(fd);
    spdlog::warn(
        "SSLKEYLOGFILE is set: the TLS secrets of every connection are being appended to {}; "
        "whoever reads that file can decrypt this traffic. Unset SSLKEYLOGFILE unless you are "
        "debugging.",
        path);
  }
  files->emplace(path, file);
  return file;
}

int ctx_keylog_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

void write_keylog_line(const SSL* ssl, const char* line) {
  auto* file =
      static_cast<keylog_file*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_keylog_index()));
  if (file) file->append(line);
}

// Only when SSLKEYLOGFILE names a file, as in curl and browsers; never on otherwise.
void enable_keylog_if_requested(SSL_CTX* ctx) {
  const char* path = std::getenv("SSLKEYLOGFILE");
  if (!path || *path == '\0') return;
  keylog_file* file = open_keylog(path);
  if (!file) return;
  if (SSL_CTX_set_ex_data(ctx, ctx_keylog_index(), file) != 1)
    throw_openssl_error("cannot attach key log file");
  SSL_CTX_set_keylog_callback(ctx, write_keylog_line);
}

}  // namespace

boost::asio::ssl::context make_server_context(const key_pair& identity,
                                              const std::vector<std::string>& alpn) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_server);
  SSL_CTX* native = ctx.native_handle();
  common_setup(native);
  enable_keylog_if_requested(native);
  SSL_CTX_set_options(native, server_choice);
  use_identity(native, identity);
  if (!alpn.empty()) {
    auto wire = std::make_unique<std::string>(alpn_wire(alpn));
    if (SSL_CTX_set_ex_data(native, ctx_alpn_index(), wire.get()) != 1)
      throw_openssl_error("cannot store ALPN list");
    SSL_CTX_set_alpn_select_cb(native, select_alpn, wire.release());
  }
  return ctx;
}

boost::asio::ssl::context make_web_server_context(const key_pair& identity) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_server);
  SSL_CTX* native = ctx.native_handle();
  // TLS 1.2 too: visitors bring whatever browser or client they have. Forward-secret AEAD only.
  const aead_order order = preferred_aead_order();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(native, tls13_ciphersuites(order)) != 1 ||
      SSL_CTX_set_cipher_list(native, tls12_cipher_list(order)) != 1 ||
      SSL_CTX_set1_groups_list(native, groups) != 1)
    throw_openssl_error("cannot configure the web TLS context");
  SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | server_choice);
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  enable_keylog_if_requested(native);
  use_identity(native, identity);
  auto wire = std::make_unique<std::string>(alpn_wire({"http/1.1"}));
  if (SSL_CTX_set_ex_data(native, ctx_alpn_index(), wire.get()) != 1)
    throw_openssl_error("cannot store ALPN list");
  SSL_CTX_set_alpn_select_cb(native, select_alpn, wire.release());
  return ctx;
}

trust trust_for_peer(const std::string& pin, const std::string& ca_file) {
  return pin.empty() && ca_file.empty() ? trust::system_store : trust::pins_and_ca_files;
}

boost::asio::ssl::context make_client_context(const std::vector<std::string>& alpn, trust anchors) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
  SSL_CTX* native = ctx.native_handle();
  common_setup(native);
  enable_keylog_if_requested(native);
  if (!alpn.empty()) {
    auto wire = alpn_wire(alpn);
    // Unlike most of OpenSSL, 0 means success here.
    if (SSL_CTX_set_alpn_protos(native, reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned int>(wire.size())) != 0)
      throw_openssl_error("cannot set ALPN protocols");
  }
  if (anchors == trust::system_store && SSL_CTX_set_default_verify_paths(native) != 1)
    throw_openssl_error("cannot load default verify paths");
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

void apply_peer_verification(SSL* ssl, const peer_verification& v, verification_outcome* outcome) {
  if (!ssl || !outcome) throw std::invalid_argument("apply_peer_verification: null argument");
  *outcome = {};

  std::string host = v.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  bool host_is_ip = !ec;
  if (!host.empty() && !host_is_ip && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1)
    throw_openssl_error("cannot set SNI host name");

  if (SSL_set_ex_data(ssl, ssl_outcome_index(), outcome) != 1)
    throw_openssl_error("cannot attach verification outcome");

  if (!v.pin.empty()) {
    auto pin = normalize_fingerprint(v.pin);
    if (!pin) throw std::invalid_argument("malformed certificate pin");
    outcome->expected_pin = *pin;
    SSL_set_verify(ssl, SSL_VERIFY_PEER, verify_pin);
    return;
  }

  if (host.empty()) throw std::invalid_argument("chain verification needs a host name to check");
  if (!v.ca_file.empty()) {
    x509_store_ptr store(X509_STORE_new());
    if (!store || X509_STORE_load_file(store.get(), v.ca_file.c_str()) != 1)
      throw_openssl_error("cannot load CA file " + v.ca_file);
    // Per connection, so it cannot touch other connections sharing the SSL_CTX.
    if (SSL_set0_verify_cert_store(ssl, store.get()) != 1)
      throw_openssl_error("cannot set verify store");
    store.release();
  }
  if (host_is_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) != 1)
      throw_openssl_error("cannot set IP address to verify");
  } else if (SSL_set1_host(ssl, host.c_str()) != 1) {
    throw_openssl_error("cannot set host name to verify");
  }
  SSL_set_verify(ssl, SSL_VERIFY_PEER, verify_chain);
}

std::string peer_fingerprint(SSL* ssl) {
  X509* cert = ssl ? SSL_get0_peer_certificate(ssl) : nullptr;
  return cert ? fingerprint_sha256(cert) : std::string();
}

}  // namespace burrow::tls
