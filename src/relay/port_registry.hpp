// Which public port belongs to which agent, shared by every relay thread. Ports are bound here;
// a port whose agent has gone stays reserved for the same token through a grace period.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/address.hpp"
#include "proto/control.hpp"

namespace burrow::link {
class link;
}

namespace burrow::relay {

// Who holds a claim: the token (by its hash, safe to log) and the agent process (session).
struct owner_id {
  std::string token_id;
  std::string session;
};

class public_port;

class port_registry {
 public:
  // Creates the listener for a port on some executor; returns null and sets `error` on failure.
  using listener_factory = std::function<std::shared_ptr<public_port>(
      std::uint16_t port, std::string_view service, std::string& error)>;

  port_registry(port_range range, std::chrono::milliseconds grace, std::string advertise_host,
                listener_factory factory);

  // `allowed`: the ports the owner's token may take (see allowed_ranges); nullopt: any in range.
  proto::service_result claim(const owner_id& owner, const proto::service_spec& spec,
                              const std::shared_ptr<link::link>& link,
                              const std::optional<std::vector<port_range>>& allowed = std::nullopt);
  // A link closed: its ports keep working through other links of the same agent, or enter grace.
  void detach(const link::link* link);
  // The link to carry a new visitor of `port`, spreading visitors over the agent's links.
  struct route {
    std::shared_ptr<link::link> link;
    std::string service;
  };
  route pick(std::uint16_t port);
  // Releases ports whose grace ran out; returns how many.
  std::size_t expire(std::chrono::steady_clock::time_point now);
  // Closes every listener (shutdown).
  void close_all();
  // Calls `fn` for every bound port's listener, with the registry locked: a port bound while this
  // runs is either among them or bound after it returns.
  void for_each_listener(const std::function<void(public_port&)>& fn);
  std::size_t size();

  // Ports held by a token, in grace or not.
  std::size_t count(std::string_view token_id);
  // Of those, how many are in grace: their agent left, and they wait for it to come back.
  std::size_t count_in_grace(std::string_view token_id);
  // True if `owner`'s token already holds what `spec` asks for, so claiming it again adds no
  // service: the same port, or (any port) the same service of the same agent.
  bool holds(const owner_id& owner, const proto::service_spec& spec);
  // Releases at once, without grace, every port for which `drop(port, owner)` is true; returns
  // "PORT (SERVICE)" for each.
  std::vector<std::string> release_if(
      const std::function<bool(std::uint16_t port, const owner_id& owner)>& drop);
  void set_grace(std::chrono::milliseconds grace);

 private:
  struct entry {
    std::string service;
    owner_id owner;
    std::vector<std::weak_ptr<link::link>> links;
    std::shared_ptr<public_port> listener;  // null while reserved in grace
    std::chrono::steady_clock::time_point grace_until{};
    std::size_t next = 0;
  };

  std::shared_ptr<public_port> bind(std::uint16_t port, const std::string& service,
                                    std::string& error);
  proto::service_result ok(std::uint16_t port, const std::string& name) const;

  std::mutex mutex_;
  std::map<std::uint16_t, entry> ports_;
  port_range range_;
  std::uint16_t cursor_;
  std::chrono::milliseconds grace_;
  std::string advertise_host_;
  listener_factory factory_;
};

}  // namespace burrow::relay
