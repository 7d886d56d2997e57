// The agent: keeps several links to the relay alive, registers its services on each, and turns
// every stream the relay opens into a connection to the local service.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "acme/tls_alpn.hpp"
#include "agent/agent_config.hpp"
#include "core/log.hpp"
#include "core/workers.hpp"
#include "e2ee/session_registry.hpp"
#include "link/dial.hpp"
#include "link/link.hpp"
#include "tls/certs.hpp"

namespace burrow::agent {

// Exit codes that tell a script why the agent stopped.
enum exit_code : int {
  exit_ok = 0,
  exit_config = 1,          // bad settings, or the relay refused every service
  exit_bad_token = 2,       // the relay did not accept the token
  exit_relay_identity = 3,  // the relay's certificate did not match the pin or chain
};

class agent {
 public:
  explicit agent(agent_config config);
  ~agent();
  // Runs until SIGINT or SIGTERM (then drains) or a fatal error; returns an exit code.
  int run();

 private:
  struct service_state {
    service_config config;
    boost::asio::ip::tcp::endpoint target;
    std::uint16_t assigned_port = 0;
    std::string public_address;
    bool refused_logged = false;
    bool announced = false;  // the end-to-end visitor command, or the share URL, was printed
    // Blind share URLs (guarded by mutex_): the TLS visitors meet, the name it is for, and when
    // to ask the relay for the next certificate.
    std::shared_ptr<boost::asio::ssl::context> web_tls;
    bool own_cert = false;  // the user's --cert: never renewed through the relay
    std::string host;       // NAME.DOMAIN, from the relay's answer
    std::chrono::steady_clock::time_point renew_at = std::chrono::steady_clock::time_point::max();
    std::chrono::steady_clock::time_point requested_at{};
    // Expiry (idle-expiry, expire-in): the last request let through, as steady-clock ticks, shared
    // with the sessions that update it; and whether the URL has been given up.
    std::shared_ptr<std::atomic<std::int64_t>> last_request =
        std::make_shared<std::atomic<std::int64_t>>(0);
    bool expired = false;
    // ACME: an issuance is running; the certificate is the CA's (not the placeholder that only
    // answers validations); when to try again after a failure.
    bool acme_running = false;
    bool acme_cert = false;
    std::chrono::steady_clock::time_point acme_retry_at{};
    log_limiter local_errors{std::chrono::seconds(10)};
  };

  boost::asio::awaitable<void> link_slot(unsigned index);
  boost::asio::awaitable<std::string> serve_link(unsigned index, std::shared_ptr<link::link> l);
  boost::asio::awaitable<link::dial_result> connect_once(unsigned index);
  boost::asio::awaitable<void> local_session(std::shared_ptr<link::link> link,
                                             std::shared_ptr<link::stream> stream,
                                             proto::open_metadata meta, std::size_t service);
  // End-to-end session keys (src/agent/e2ee_sessions.cpp, docs/protocol.md section 6c): a
  // session stream's handshake and lifetime; the keys of a stream that names a session, or null
  // once the stream has been refused.
  boost::asio::awaitable<void> e2ee_session_stream(std::shared_ptr<link::link> link,
                                                   std::shared_ptr<link::stream> stream,
                                                   proto::open_metadata meta, std::size_t service);
  std::unique_ptr<link::record_protection> keyed_stream(link::link& link, link::stream& stream,
                                                        const proto::open_metadata& meta,
                                                        std::size_t service);
  boost::asio::awaitable<void> shutdown();
  void on_registered(link::link& link, const proto::registered& r);
  void announce_e2ee(const service_state& s);
  void announce_share_url(service_state& s);
  // Blind share URLs: certificate requests, the relay's answers, and renewal.
  void maybe_request_cert(link::link& l, service_state& s);
  void on_certificate(const proto::certificate& c);
  // ACME (called with mutex_ held): starts an issuance for service `index` unless one runs.
  void start_acme(std::size_t index);
  boost::asio::awaitable<void> acme_issue(std::size_t index);
  std::shared_ptr<boost::asio::ssl::context> acme_context(const tls::key_pair& pair);
  // Every second: certificates due for renewal, and share URLs whose time is up.
  boost::asio::awaitable<void> share_url_upkeep();
  void expire(service_state& s, const std::string& why);
  boost::asio::awaitable<void> web_session(std::shared_ptr<link::link> link,
                                           std::shared_ptr<link::stream> stream,
                                           proto::open_metadata meta, std::size_t service);
  proto::register_services registration();
  void fatal(int code, const std::string& message);

  agent_config config_;
  std::string session_;
  std::string relay_host_;
  std::string relay_port_;
  boost::asio::ssl::context tls_;
  workers workers_;
  // End to end: this agent's own key and certificate, and the TLS server visitors meet.
  tls::key_pair identity_;
  std::filesystem::path state_dir_;
  std::shared_ptr<acme::challenge_store> acme_challenges_ =
      std::make_shared<acme::challenge_store>();
  std::string fingerprint_;
  std::optional<boost::asio::ssl::context> e2ee_tls_;
  e2ee::session_registry e2ee_sessions_;
  log_limiter e2ee_errors_{std::chrono::seconds(10)};  // guarded by mutex_
  log_limiter refusals_{std::chrono::seconds(1)};      // guarded by mutex_

  std::mutex mutex_;  // guards services_' assignment state and links_
  std::vector<service_state> services_;
  std::vector<std::weak_ptr<link::link>> links_;
  bool ever_registered_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  std::atomic<std::size_t> active_streams_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> exit_code_{exit_ok};
};

}  // namespace burrow::agent
