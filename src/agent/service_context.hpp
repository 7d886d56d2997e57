// What the agent's services share, owned by the agent and lent to each service: settings, the
// agent's identity, end-to-end sessions, ACME challenges, log limiters, the links and the mutex.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
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
#include "proto/control.hpp"
#include "tls/certs.hpp"

namespace burrow::link {
class link;
}

namespace burrow::agent {

// This agent's own key and certificate: the TLS server end-to-end visitors meet, the key share
// URLs' certificates are for, and the fingerprint visitors pin.
struct agent_identity {
  std::filesystem::path state_dir;
  tls::key_pair key;
  std::string fingerprint;
  boost::asio::ssl::context e2ee_tls;
};

class service_context {
 public:
  service_context(const agent_config& config, workers& threads, const std::atomic<bool>& stopping);

  const agent_config& config;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // The agent's state directory: --state-dir, or the default one.
  std::filesystem::path state_dir() const;
  // Loaded, or made in the state directory, on first use: the factories of the kinds that need
  // it ask (on one thread, before the agent runs). Throws config_error.
  agent_identity& identity();
  // `c`, its name (unless the user gave it) made one the relay holds for this agent alone: the
  // same after a restart (the key is kept), different from every other agent's (the key is not).
  service_config named_for_this_agent(service_config c);

  // The local service's address; throws config_error.
  boost::asio::ip::tcp::endpoint resolve_local(const service_config& c) const;
  // Connects `socket` to a local service within the local connect timeout: the connect's
  // outcome, or none when the timeout passed first.
  boost::asio::awaitable<std::optional<boost::system::error_code>> connect_local(
      boost::asio::ip::tcp::socket& socket, boost::asio::ip::tcp::endpoint target);

  // End-to-end sessions of every end-to-end service; each names its own by a number it takes.
  e2ee::session_registry e2ee_sessions;
  std::size_t e2ee_session_owners = 0;
  std::shared_ptr<acme::challenge_store> acme_challenges =
      std::make_shared<acme::challenge_store>();

  std::mutex mutex;  // guards the services' state, the limiters and links below
  log_limiter tls_failures{std::chrono::seconds(10)};  // visitors' handshakes with this agent
  log_limiter access_refusals{std::chrono::seconds(1)};
  std::vector<std::weak_ptr<link::link>> links;
  // With mutex held: the first link that still exists, or null; a control message posted to
  // each of them.
  std::shared_ptr<link::link> first_live_link();
  void send_to_every_link(const proto::control_message& m);

  // Where the agent's own work runs (the upkeep, ACME issuance): the first worker thread.
  boost::asio::any_io_executor first_executor();
  bool stopping() const { return stopping_; }

  // Streams a graceful stop waits for: a visitor's connection holds a counted_stream while it
  // lasts.
  std::atomic<std::size_t> active_streams{0};
  struct counted_stream {
    std::atomic<std::size_t>& n;
    ~counted_stream() { --n; }
  };
  counted_stream count_stream() {
    ++active_streams;
    return counted_stream{active_streams};
  }

 private:
  workers& workers_;
  const std::atomic<bool>& stopping_;
  std::optional<agent_identity> identity_;
};

}  // namespace burrow::agent
