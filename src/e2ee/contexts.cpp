// The end-to-end contexts: tls/contexts' TLS 1.3 setup plus mandatory ALPN, one ticket per
// handshake, and a client session cache fed by OpenSSL's new-session callback.
#include "e2ee/contexts.hpp"

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

  void store(const std::string& key, SSL_SESSION* s) {
    SSL_SESSION_up_ref(s);
    session_ptr owned(s);
    std::lock_guard lock(mutex);
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

}  // namespace

boost::asio::ssl::context make_server_context(const tls::key_pair& identity) {
  auto ctx = tls::make_server_context(identity, {std::string(alpn_protocol)});
  SSL_CTX* native = ctx.native_handle();
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_client_hello_cb(native, require_alpn, nullptr);
  // Stateless tickets (the default) let a client resume without a server-side cache.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_num_tickets(native, 1) != 1) tls::throw_openssl_error("cannot set tickets");
  return ctx;
}

boost::asio::ssl::context make_client_context() {
  auto ctx = tls::make_client_context({std::string(alpn_protocol)});
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
    int ok = SSL_set_session(ssl, cached);  // takes its own reference
    SSL_SESSION_free(cached);
    if (ok != 1) tls::throw_openssl_error("cannot offer cached session");
  }
}

std::size_t session_cache::size() const {
  std::lock_guard lock(state_->mutex);
  return state_->sessions.size();
}

void session_cache::clear() {
  std::lock_guard lock(state_->mutex);
  state_->sessions.clear();
}

}  // namespace burrow::e2ee
