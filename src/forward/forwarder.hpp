// `burrow forward`: local TCP port forwarding with no relay, socat's and rinetd's job. Each rule
// listens on one address and connects every visitor to one target, optionally after a PROXY
// protocol header; the relay's per-source limits guard every listener, and a first SIGTERM or
// SIGINT stops accepting and lets open connections finish for the drain timeout.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/log_limiter.hpp"
#include "core/source_limits.hpp"
#include "core/workers.hpp"
#include "proto/proxy_protocol.hpp"

namespace burrow::forward {

struct forward_rule {
  std::string listen;  // HOST:PORT (or PORT: all interfaces); port 0 picks one
  std::string target;  // HOST:PORT, resolved once when the forward starts (every address kept)
  proto::proxy_version proxy = proto::proxy_version::none;
};

struct forward_config {
  std::vector<forward_rule> rules;
  source_limit_config limits;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(10)};
  unsigned threads = 1;
};

class forwarder {
 public:
  explicit forwarder(forward_config config);
  ~forwarder();
  forwarder(const forwarder&) = delete;
  forwarder& operator=(const forwarder&) = delete;

  // Resolves every target and binds every listener; throws config_error with the rule and why.
  void bind();
  // Where each rule listens, in order (after bind()).
  std::vector<boost::asio::ip::tcp::endpoint> endpoints() const;
  // Serves until a signal has drained it; returns the exit code.
  int run();

 private:
  struct listener;
  void accept_on(listener& l);
  void serve(listener& l, boost::asio::ip::tcp::socket visitor, source_limits::lease lease);
  void begin_drain();

  forward_config config_;
  workers workers_;
  source_limits limits_;
  std::vector<std::unique_ptr<listener>> listeners_;
  std::atomic<std::size_t> open_{0};
  std::atomic<bool> draining_{false};
  shared_log_limiter refusals_, failures_;
};

}  // namespace burrow::forward
