// The relay: accepts agent links, hands out public ports and turns each visitor of a port into a
// stream on one of the owning agent's links. One io_context per worker thread.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log_limiter.hpp"
#include "core/metrics.hpp"
#include "core/source_limits.hpp"
#include "core/workers.hpp"
#include "link/link.hpp"
#include "relay/access_tokens.hpp"
#include "relay/name_registry.hpp"
#include "relay/port_registry.hpp"
#include "relay/relay_config.hpp"
#include "relay/state_dir.hpp"

namespace burrow::relay {

class relay {
 public:
  relay(relay_config config, relay_state state);
  ~relay();

  // Binds the agent listeners; throws std::runtime_error with a clear message on failure.
  void bind();
  std::vector<boost::asio::ip::tcp::endpoint> agent_endpoints() const;
  const std::string& advertise_host() const { return advertise_; }
  std::vector<boost::asio::ip::tcp::endpoint> https_endpoints() const;
  std::vector<boost::asio::ip::tcp::endpoint> http_endpoints() const;
  std::vector<boost::asio::ip::tcp::endpoint> metrics_endpoints() const;

  // Serves until SIGTERM or SIGINT, then drains and returns the exit code. SIGHUP reloads the
  // configuration (through the source set below) and the tokens file.
  int run();

  // Where SIGHUP reads the configuration again; it throws config_error for a bad one.
  void set_config_source(std::function<relay_config()> source) {
    config_source_ = std::move(source);
  }
  // Applies what can change without rebinding: timeouts, grace, share-certificate lifetime and
  // the tokens file; other changes are logged as needing a restart. Thread-safe.
  void reload(const relay_config& config);

 private:
  // Held for as long as a connection is open: it counts against its source's limit.
  using lease = source_limits::lease;
  enum class listener { agent, https, http, port };
  static constexpr std::size_t listener_count = 4;
  // What admission gives a connection for its life: its place in its source's count, and the
  // peer's address as accept() returned it (no getpeername later).
  struct admitted {
    lease held;
    boost::asio::ip::tcp::endpoint peer;
  };
  using session_fn = boost::asio::awaitable<void> (relay::*)(boost::asio::ip::tcp::socket,
                                                             admitted);
  // Accepts until the relay stops; each admitted connection runs `session` on its own worker.
  boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor, listener which,
                                           session_fn session);
  // The per-source check at accept, before any byte is read: a refused connection is closed with
  // a reset, counted and logged at a bounded rate. Refused: the descriptor is set to close with a
  // reset; the caller drops the socket.
  std::optional<admitted> admit(int fd, const boost::asio::ip::tcp::endpoint& peer, listener which);
  // TCP keepalive on every listener admit() serves (core/acceptor.hpp: the sockets they accept
  // inherit it), so a visitor or agent that vanished without a FIN is reaped. Set on the agent,
  // HTTPS and HTTP listeners as bind() makes them, on each public port as it is bound, and again
  // on all of them, each on its own thread, when a reload changes `tcp-keepalive` (connections
  // open by then keep what they had).
  void set_listeners_keepalive(std::chrono::seconds idle);  // before the workers run, or on theirs
  void keep_listeners_alive(std::chrono::seconds idle);     // from any thread
  // Counts a connection turned away after it was admitted (bad TLS, no hello, a deadline...).
  // Logged at most once a second, with how many were held back.
  void rejected(listener which, std::string_view reason, const std::string& who,
                std::string_view detail = {}, bool warn = false);
  void accept_failed(listener which);
  static const char* listener_title(listener which);
  void register_metrics();
  void bind_metrics();
  void serve_metrics_listeners();
  // A link from an agent, or from a visitor's `burrow connect`: the hello says which.
  boost::asio::awaitable<void> link_session(boost::asio::ip::tcp::socket socket, admitted conn);
  void serve_agent(link::link::handlers& h, link::link* link, owner_id owner,
                   const std::string& name, std::shared_ptr<token_grant> grant);
  // Re-reads the tokens file (if changed, or always with `force`) and acts on what changed:
  // links of a revoked token are closed and its claims released, claims outside a narrowed
  // scope are released.
  void reload_tokens(bool force);
  void on_hangup();
  void wait_hangup();
  std::chrono::milliseconds handshake_timeout() const { return handshake_timeout_.load(); }
  // A stream a visitor opened to an end-to-end service: bridged to a stream on an agent link.
  boost::asio::awaitable<void> visitor_stream(std::shared_ptr<link::link> link,
                                              std::shared_ptr<link::stream> stream,
                                              proto::open_metadata meta);
  boost::asio::awaitable<void> visitor_session(std::shared_ptr<link::link> link,
                                               boost::asio::ip::tcp::socket socket,
                                               std::uint16_t port, std::string service, int attempt,
                                               admitted conn);
  // Signs a share URL's certificate from the agent's request, if that agent holds the name.
  proto::certificate sign_share_cert(const owner_id& owner, const proto::cert_request& req,
                                     const std::string& who);
  // HTTPS share URLs (relay_https.cpp): route by the ClientHello's SNI, without decrypting.
  void bind_https();
  // Binds `addresses` into `out`; when they are the defaults (`given` false), addresses that
  // cannot be bound are skipped with a warning.
  void bind_web(const std::vector<std::string>& addresses, bool given, std::uint16_t port,
                const char* what,
                std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>>& out);
  // Plain HTTP (relay_http.cpp): route by Host; redirect to HTTPS or forward in the clear.
  boost::asio::awaitable<void> http_session(boost::asio::ip::tcp::socket socket, admitted conn);
  boost::asio::awaitable<void> http_visitor(std::shared_ptr<link::link> link,
                                            boost::asio::ip::tcp::socket socket, std::string name,
                                            std::string head, int attempt, admitted conn);
  boost::asio::awaitable<void> https_session(boost::asio::ip::tcp::socket socket, admitted conn);
  boost::asio::awaitable<void> https_visitor(std::shared_ptr<link::link> link,
                                             boost::asio::ip::tcp::socket socket, std::string name,
                                             int attempt, admitted conn);
  // Inspect mode: TLS ends here with the relay's *.DOMAIN certificate; each request is checked
  // against the share URL's rules, logged, and forwarded as HTTP in a stream to the agent.
  boost::asio::awaitable<void> inspect_visitor(std::shared_ptr<link::link> link,
                                               boost::asio::ip::tcp::socket socket,
                                               std::string name,
                                               std::shared_ptr<const http::access_rules> rules,
                                               admitted conn);
  // Ends TLS with the relay's own certificate for the domain and answers with a small page.
  boost::asio::awaitable<void> error_page(boost::asio::ip::tcp::socket socket, int status,
                                          std::string message);
  boost::asio::awaitable<void> housekeeping();
  boost::asio::awaitable<void> shutdown();
  void on_visitor(boost::asio::ip::tcp::socket socket, std::uint16_t port, int attempt,
                  admitted conn);

  relay_config config_;
  relay_state state_;
  std::string advertise_;
  // Before the workers: sessions destroyed with the workers' io_contexts give their leases back.
  source_limits sources_;
  metrics metrics_;
  struct listener_counters {
    metrics::counter* accepted = nullptr;
    metrics::counter* refused_open = nullptr;
    metrics::counter* refused_rate = nullptr;
    metrics::counter* accept_errors = nullptr;
  };
  std::array<listener_counters, listener_count> counters_{};
  shared_log_limiter refusal_log_;
  std::array<shared_log_limiter, listener_count> rejection_log_;
  std::atomic<std::chrono::seconds> tcp_keepalive_{std::chrono::seconds(60)};  // reloadable
  workers workers_;
  boost::asio::ssl::context tls_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> agent_acceptors_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> https_acceptors_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> http_acceptors_;
  std::uint16_t https_port_ = 0;          // for share URLs; 0: no HTTPS listener
  boost::asio::ssl::context domain_tls_;  // *.DOMAIN, signed by the relay's CA: error pages
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> metrics_acceptors_;
  std::unique_ptr<port_registry> registry_;
  name_registry names_;

  access_tokens tokens_;
  std::mutex claims_mutex_;  // a scope check and the claim it allows happen as one
  // Reloadable settings (SIGHUP), read by every thread.
  std::atomic<std::chrono::milliseconds> handshake_timeout_;
  std::atomic<std::chrono::milliseconds> drain_timeout_;
  std::atomic<std::chrono::milliseconds> stream_idle_timeout_;
  std::atomic<std::chrono::seconds> share_cert_lifetime_;
  std::mutex reload_mutex_;
  relay_config loaded_;  // the configuration last applied, to tell what changed
  std::function<relay_config()> config_source_;
  boost::asio::signal_set hangup_;

  std::mutex links_mutex_;
  std::vector<std::weak_ptr<link::link>> links_;
  std::atomic<std::size_t> active_streams_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace burrow::relay
