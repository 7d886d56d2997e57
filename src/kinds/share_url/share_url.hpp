// What the share URL modes have in common: the address the relay gives, the announcement, expiry
// (idle-expiry, expire-in), and web_session, the HTTP proxy blind and inspect modes run.
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "agent/local_stream.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"

namespace burrow::kinds::share_url {

class share_url_side : public agent::service {
 public:
  share_url_side(agent::service_context& ctx, agent::service_config config);

  const std::string& name() const override { return config_.name; }
  std::optional<proto::service_spec> registration() const override;
  void on_accepted(link::link& l, const proto::service_result& r) override;
  std::optional<proto::service_spec> on_refused(const proto::service_result&) override {
    return std::nullopt;
  }
  void upkeep(std::chrono::steady_clock::time_point now) override;
  bool expired() const override { return expired_; }

 protected:
  // The URL the relay gave, and its host name (NAME.DOMAIN).
  void take_address(const proto::service_result& r);
  // Prints the share URL, once.
  void announce();
  // What visitors should know besides the URL (which CA to trust): whole lines, or nothing.
  virtual std::string visitor_note() const { return {}; }
  // A request, or a passthrough connection: the idle-expiry clock starts again.
  void touch();

  // Blind and inspect modes (web_session.cpp): the visitor's HTTP, in TLS ended here or in the
  // clear (`relay_ended_tls`: inspect mode, where the relay also checked the access rules),
  // proxied to the local service.
  boost::asio::awaitable<void> web_session(std::shared_ptr<link::link> l,
                                           std::shared_ptr<link::stream> s,
                                           proto::open_metadata meta, bool relay_ended_tls);
  // With the context's mutex held: the TLS visitors meet here, if any; whether the certificate
  // is still to come (visitors are then answered 503).
  virtual std::shared_ptr<boost::asio::ssl::context> visitor_tls() const { return nullptr; }
  virtual bool certificate_pending() const { return false; }

  agent::service_context& ctx_;
  agent::local_target target_;
  agent::agent_identity& identity_;
  const agent::service_config config_;
  // Guarded by the context's mutex.
  std::string public_address_;
  std::string host_;  // NAME.DOMAIN, from the relay's answer
  bool announced_ = false;
  bool expired_ = false;  // the URL has been given up

 private:
  void expire(const std::string& why);

  // The last request let through, as steady-clock ticks, shared with the sessions that update it.
  std::shared_ptr<std::atomic<std::int64_t>> last_request_ =
      std::make_shared<std::atomic<std::int64_t>>(
          std::chrono::steady_clock::now().time_since_epoch().count());
};

}  // namespace burrow::kinds::share_url
