// The agent: keeps several links to the relay alive, registers its services on each, and hands
// every stream the relay opens to the service it names. What a service does with it is its
// tunnel kind's business (src/kinds/).
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_config.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"
#include "core/workers.hpp"
#include "link/dial.hpp"
#include "link/link.hpp"

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
  struct service_entry {
    std::unique_ptr<service> served;
    bool refusal_logged = false;  // guarded by the context's mutex
    // A newer agent with the same token took it over: neither served nor claimed again.
    bool replaced = false;  // guarded by the context's mutex
  };

  boost::asio::awaitable<void> link_slot(unsigned index);
  boost::asio::awaitable<std::string> serve_link(unsigned index, std::shared_ptr<link::link> l);
  boost::asio::awaitable<link::dial_result> connect_once(unsigned index);
  boost::asio::awaitable<void> shutdown();
  void on_open(link::link& l, std::shared_ptr<link::stream> s, proto::open_metadata meta);
  void on_registered(link::link& l, const proto::registered& r);
  void on_certificate(const proto::certificate& c);
  void on_replaced(const proto::replaced& r);
  // Every second: each service's upkeep; the names of services that expired are released.
  boost::asio::awaitable<void> upkeep();
  boost::asio::awaitable<void> ignore_hangups();
  void release(const service& s);
  service_entry* find(std::string_view name);
  proto::register_services registration();
  void fatal(int code, const std::string& message);

  agent_config config_;
  std::string session_;
  std::string relay_host_;
  std::string relay_port_;
  boost::asio::ssl::context tls_;
  std::atomic<bool> stopping_{false};
  service_context context_;
  std::vector<service_entry> services_;  // the list is fixed after construction
  bool ever_registered_ = false;         // guarded by the context's mutex
  std::atomic<int> exit_code_{exit_ok};
  // Last, so that it goes first: coroutines left on its threads are destroyed while the services
  // and the context they use still exist.
  workers workers_;
  // Installed at construction, so that a SIGHUP (a closed terminal, a reload habit) never kills
  // the agent; it is logged and ignored, since the agent does not reload its configuration.
  boost::asio::signal_set hangup_;
};

}  // namespace burrow::agent
