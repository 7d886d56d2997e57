// The end-to-end contexts: tls/contexts' TLS 1.3 setup plus mandatory ALPN, one ticket per full
// handshake and none per resumption, and a client session cache fed by OpenSSL's new-session
// callback.
#include "e2ee/contexts.hpp"

#include "e2ee/session_keys.hpp"

#include "tls/contexts.hpp"

#include <openssl/tls1.h>

#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace burrow::e2ee {

struct session_cache::state {
  struct session_free {
    void operator()(SSL_SESSION* s) const noexcept { SSL_SESSION_free(s); }
  };
  using session_ptr = std::unique_ptr<SSL_SESSION, session_free>;

  std::size_t max_entries;
  mutable std::mutex mutex;
  std::unordered_map<std::string, session_ptr> sessions;
  std::uint64_t stored = 0;  // tickets taken in, ever

  void store(const std::string& key, SSL_SESSION* s) {
    SSL_SESSION_up_ref(s);
    session_ptr owned(s);
    std::lock_guard lock(mutex);
    ++stored;
    auto it = sessions.find(key);
    if (it != sessions.end()) {
      it->second = std::move(owned);
      return;
    }
    // Keys are services times pins, so the bound is rarely reached; any victim will do.
    if (sessions.size() >= max_entries && !sessions.empty()) sessions.erase(sessions.begin());
    sessions.emplace(key, std::move(owned));
  }

  // A new reference to the session under `key`, or null.
  SSL_SESSION* find(const std::string& key) const {
    std::lock_guard lock(mutex);
    auto it = sessions.find(key);
    if (it == sessions.end()) return nullptr;
    SSL_SESSION_up_ref(it->second.get());
    return it->second.get();
  }
};

namespace {

// What a prepared SSL carries in its ex_data: where its tickets go.
struct ticket_slot {
  std::shared_ptr<session_cache::state> cache;
  std::string key;
};

void free_slot(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<ticket_slot*>(ptr);
}

int slot_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_slot);
  return index;
}

// Called by OpenSSL for each ticket a client receives. The cache takes a reference of its own,
// so the answer is always 0: OpenSSL keeps and later drops the one it lent us.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* slot = static_cast<ticket_slot*>(SSL_get_ex_data(ssl, slot_index()));
  if (!slot || !SSL_SESSION_is_resumable(session)) return 0;
  try {
    slot->cache->store(slot->key, session);
  } catch (const std::exception&) {
    // nothing may escape into OpenSSL's C frames; a lost ticket only costs a full handshake
  }
  return 0;
}

// A client that offers no ALPN is refused before the handshake goes any further.
int require_alpn(SSL* ssl, int* alert, void*) {
  const unsigned char* ext = nullptr;
  std::size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext,
                                &len) == 1)
    return SSL_CLIENT_HELLO_SUCCESS;
  *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
  return SSL_CLIENT_HELLO_ERROR;
}

// A resumed session goes on with the ticket it came with. By default OpenSSL's TLS 1.3 server
// issues a fresh ticket after every resumption: encoding and encrypting a session on the agent,
// decoding and copying one in `burrow connect`, for every visitor connection. The client's
// ticket still expires with its session (two hours), and every full handshake (no ticket, or one
// this agent cannot decrypt, say after a restart) still gets a new one. Each resumed connection
// still runs its own (EC)DHE exchange, so keeping the ticket costs no forward secrecy; and the
// relay, the only one who sees these hellos, already knows which link every stream comes from.
SSL_TICKET_RETURN keep_ticket_on_resumption(SSL*, SSL_SESSION*, const unsigned char*, std::size_t,
                                            SSL_TICKET_STATUS status, void*) {
  switch (status) {
    case SSL_TICKET_SUCCESS:
    case SSL_TICKET_SUCCESS_RENEW:
      return SSL_TICKET_RETURN_USE;
    case SSL_TICKET_EMPTY:
    case SSL_TICKET_NO_DECRYPT:
      return SSL_TICKET_RETURN_IGNORE_RENEW;
    default:  // OpenSSL does not call us with the fatal ones; should it, refuse
      return SSL_TICKET_RETURN_ABORT;
  }
}

}  // namespace

boost::asio::ssl::context make_server_context(const tls::key_pair& identity) {
  auto ctx = tls::make_server_context(
      identity,
      {std::string(alpn_own_records), std::string(alpn_protocol), std::string(alpn_session)});
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_client_hello_cb(native, require_alpn, nullptr);
  // Stateless tickets (the default) let a client resume without a server-side cache.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_num_tickets(native, 1) != 1) tls::throw_openssl_error("cannot set tickets");
  if (SSL_CTX_set_session_ticket_cb(native, nullptr, keep_ticket_on_resumption, nullptr) != 1)
    tls::throw_openssl_error("cannot set the ticket callback");
  return ctx;
}

boost::asio::ssl::context make_client_context(bool session) {
  // The agent's certificate is always verified by its pin (the fingerprint in the share link).
  auto ctx = tls::make_client_context(
      session ? std::vector<std::string>{std::string(alpn_session)}
              : std::vector<std::string>{std::string(alpn_own_records), std::string(alpn_protocol)},
      tls::trust::pins_and_ca_files);
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
  SSL_CTX_sess_set_new_cb(native, on_new_session);
  return ctx;
}

session_cache::session_cache(bool enabled, std::size_t max_entries)
    : enabled_(enabled), state_(std::make_shared<state>()) {
  state_->max_entries = max_entries;
}

void session_cache::prepare(SSL* ssl, const std::string& key) {
  if (!ssl) throw std::invalid_argument("session_cache::prepare: null SSL");
  if (!enabled_) return;
  auto slot = std::make_unique<ticket_slot>(ticket_slot{state_, key});
  auto* old = static_cast<ticket_slot*>(SSL_get_ex_data(ssl, slot_index()));
  if (SSL_set_ex_data(ssl, slot_index(), slot.get()) != 1)
    tls::throw_openssl_error("cannot attach session cache key");
  slot.release();
  delete old;  // prepared twice: the last key wins
  if (SSL_SESSION* cached = state_->find(key)) {
    // OpenSSL's client marks a TLS 1.3 session as used up once it has resumed it, and the server
    // no longer sends a fresh ticket after a resumption: each connection gets a copy, and the
    // cached session stays good until it expires.
    SSL_SESSION* copy = SSL_SESSION_dup(cached);
    SSL_SESSION_free(cached);
    if (!copy) tls::throw_openssl_error("cannot copy cached session");
    int ok = SSL_set_session(ssl, copy);  // takes its own reference
    SSL_SESSION_free(copy);
    if (ok != 1) tls::throw_openssl_error("cannot offer cached session");
  }
}

std::size_t session_cache::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->sessions.size();
}

std::uint64_t session_cache::tickets_stored() const {
  std::lock_guard lock(state_->mutex);
  return state_->stored;
}

void session_cache::clear() {
  std::lock_guard lock(state_->mutex);
  state_->sessions.clear();
}

}  // namespace burrow::e2ee
