// One configured service of the agent, as its tunnel kind serves it: made by the kind's factory
// (src/kinds/registry.hpp), asked by the agent core at each step of the service's life.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "proto/control.hpp"

namespace burrow::link {
class link;
class stream;
}  // namespace burrow::link

namespace burrow::agent {

// The agent calls every member with its service_context's mutex held, except name,
// accepts_sealed and serve, which read only what the factory set.
class service {
 public:
  virtual ~service() = default;

  // Unique within the agent: the relay's open and certificate messages name it.
  virtual const std::string& name() const = 0;
  // What to register on each link; none once the service has expired.
  virtual std::optional<proto::service_spec> registration() const = 0;
  // The relay took the registration sent on `l` (on `l`'s thread).
  virtual void on_accepted(link::link& l, const proto::service_result& result) = 0;
  // The relay refused it: a registration to ask for at once instead, or none (the agent logs the
  // refusal).
  virtual std::optional<proto::service_spec> on_refused(const proto::service_result& result) = 0;

  // Whether a stream with `meta` may be sealed: its frames come from outside the link's TLS, so
  // only a stream whose bytes this side authenticates itself may be.
  virtual bool accepts_sealed(const proto::open_metadata& meta) const = 0;
  // One stream the relay opened for this service, on the link's thread: accept or refuse it,
  // then carry it. A visitor's connection counts in service_context::count_stream while it lasts,
  // so a graceful stop waits for it.
  virtual boost::asio::awaitable<void> serve(std::shared_ptr<link::link> l,
                                             std::shared_ptr<link::stream> s,
                                             proto::open_metadata meta) = 0;

  // The relay's answer to a certificate request this service made.
  virtual void on_certificate(const proto::certificate&) {}
  // Once a second while the service has not expired: renewals, expiry.
  virtual void upkeep(std::chrono::steady_clock::time_point) {}
  // Given up for good: its name is released and its streams refused.
  virtual bool expired() const { return false; }
};

}  // namespace burrow::agent
