// `burrow connect`: the visitor's end of an end-to-end tunnel. It keeps a small pool of links to
// the relay, turns each local connection (from its listener, or its standard input and output)
// into a stream to the named service, and runs TLS with the agent inside that stream, verified
// against the agent's pinned certificate. The relay carries only ciphertext.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connect/connect_config.hpp"
#include "core/log.hpp"
#include "core/workers.hpp"
#include "e2ee/contexts.hpp"
#include "e2ee/session_keys.hpp"
#include "link/dial.hpp"
#include "link/link.hpp"

namespace burrow::e2ee {
class secure_stream;
}

namespace burrow::connect {

enum exit_code : int {
  exit_ok = 0,
  exit_failed = 1,    // bad settings, the relay refused, or the connection failed
  exit_identity = 3,  // the relay or the agent is not the one pinned
};

class connector {
 public:
  explicit connector(connect_config config);
  ~connector();

  // Binds the local listener (listen mode); throws std::runtime_error with a clear message.
  void bind();
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  // Listen mode: serves until SIGINT/SIGTERM. Stdio mode: until the one connection ends.
  // Returns the exit code.
  int run();

 private:
  boost::asio::awaitable<void> link_slot(unsigned index);
  boost::asio::awaitable<std::string> serve_link(std::shared_ptr<link::link> l);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> stdio_session();
  boost::asio::awaitable<bool> stdio_splice(std::unique_ptr<e2ee::secure_stream> tls);
  // Which link a connection may take: not `avoid` (it was just full), and, once every link has
  // been full, only one that connected after generation `after`.
  struct link_choice {
    const link::link* avoid = nullptr;
    std::uint64_t after = 0;
  };
  // A connected link that fits `choice`, waiting up to the connect timeout while there is none.
  boost::asio::awaitable<std::shared_ptr<link::link>> wait_for_link(link_choice choice);
  std::shared_ptr<link::link> pick(link_choice choice);
  // Adds a link slot (up to max_links); `when_full`: only if no other added slot is still
  // connecting, so a burst of full links adds one link at a time. True when a new link is on
  // its way (added now or earlier).
  bool grow(bool when_full = true);
  boost::asio::awaitable<void> dispatch(boost::asio::ip::tcp::socket socket, int attempt,
                                        link_choice choice);
  boost::asio::awaitable<void> session(std::shared_ptr<link::link> link,
                                       boost::asio::ip::tcp::socket socket, int attempt);
  // Opens the stream and runs the TLS handshake with the agent; null on failure (logged).
  // `full` is set when the link could not take another stream.
  boost::asio::awaitable<std::unique_ptr<e2ee::secure_stream>> open_secure(
      std::shared_ptr<link::link> link, bool& full);
  // End-to-end session keys (src/connect/keyed_streams.cpp, docs/protocol.md section 6c).
  struct live_session {
    std::shared_ptr<const e2ee::session_keys> keys;
    std::chrono::steady_clock::time_point born;
    std::atomic<std::uint64_t> next{1};  // the next stream's number
    std::atomic<bool> dead{false};
    boost::asio::any_io_executor executor;   // the session stream's
    e2ee::secure_stream* control = nullptr;  // the session stream, used on `executor` only
  };
  // The session to key a new connection from, waiting (up to the connect timeout) while one is
  // being made; null when there is none to have (the agent does not offer them, or failed).
  boost::asio::awaitable<std::shared_ptr<live_session>> usable_session(
      std::shared_ptr<link::link> link);
  // Makes a session over `link` and holds it until either end closes it.
  boost::asio::awaitable<void> run_session(std::shared_ptr<link::link> link);
  // Closes a session that new connections no longer use, after a grace for those on their way.
  void retire(std::shared_ptr<live_session> live, std::chrono::milliseconds grace);
  // A stream keyed from `live`, once the agent has accepted it; null when it did not (`full`:
  // the link could not take it; otherwise the caller runs a handshake instead).
  boost::asio::awaitable<std::unique_ptr<e2ee::secure_stream>> open_keyed(
      std::shared_ptr<link::link> link, std::shared_ptr<live_session> live, bool& full);
  void fatal(int code, const std::string& message);
  void finish(int code);

  connect_config config_;
  std::string session_;
  link::dial_options dial_;
  workers workers_;
  boost::asio::ssl::context link_tls_;
  boost::asio::ssl::context e2ee_tls_;
  e2ee::session_cache sessions_;
  boost::asio::ssl::context e2ee_session_tls_;
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;

  std::mutex mutex_;  // guards links_, slots_ and the log limiters
  struct pooled {
    std::shared_ptr<link::link> link;
    std::uint64_t generation;  // order of connecting
  };
  std::vector<pooled> links_;  // connected and usable
  std::uint64_t generation_ = 0;
  unsigned slots_ = 0;
  unsigned growing_ = 0;  // slots added for a full pool that have not connected yet
  std::size_t next_ = 0;
  log_limiter refused_log_{std::chrono::seconds(10)};
  log_limiter handshake_log_{std::chrono::seconds(10)};
  std::shared_ptr<live_session> session_now_;  // guarded by mutex_, as the next three
  bool session_opening_ = false;
  std::chrono::steady_clock::time_point sessions_retry_at_{};
  // Connections waiting while a session is made, each woken on its own executor once the
  // session is settled, made or not (guarded by mutex_).
  struct session_waiter {
    boost::asio::any_io_executor executor;
    std::weak_ptr<boost::asio::steady_timer> timer;
  };
  std::vector<session_waiter> session_waiters_;
  log_limiter session_log_{std::chrono::seconds(60)};

  std::atomic<bool> stopping_{false};
  std::atomic<int> exit_code_{exit_ok};
};

}  // namespace burrow::connect
