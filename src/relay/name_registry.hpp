// End-to-end services by name, shared by every relay thread: who holds a name, the links that
// reach its agent, and the visitor token it asks for. A name whose agent has gone stays reserved
// for the same token through a grace period, like a public port.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/access_rules.hpp"
#include "proto/control.hpp"
#include "proto/frame.hpp"
#include "relay/port_registry.hpp"

namespace burrow::relay {

class name_registry {
 public:
  explicit name_registry(std::chrono::milliseconds grace);

  proto::service_result claim(const owner_id& owner, const proto::service_spec& spec,
                              const std::shared_ptr<link::link>& link,
                              std::shared_ptr<const http::access_rules> rules = nullptr);
  // A link closed: its names keep working through other links of the same agent, or enter grace.
  void detach(const link::link* link);

  // The agent link to carry a visitor's stream, or why there is none. A link on `preferred`
  // (the visitor link's thread) wins, so most streams are bridged without a thread hop; `avoid`
  // (a link that just refused a stream for being full) is taken only when nothing else is left.
  struct route {
    bool found = false;  // the name is held (its kind then says whether this visitor may come)
    std::shared_ptr<link::link> link;
    proto::stream_status status = proto::stream_status::ok;
    std::string reason;
    proto::tunnel_kind kind = proto::tunnel_kind::tcp_e2ee;
    bool plain_http = false;
    std::shared_ptr<const http::access_rules> rules;  // inspect mode: enforced by the relay
  };
  route pick(const std::string& name, std::string_view visitor_token,
             const boost::asio::any_io_executor& preferred, const link::link* avoid = nullptr);

  // The kind of the service `owner` holds as `name`, if it does.
  std::optional<proto::tunnel_kind> kind_held(std::string_view name, const owner_id& owner);
  // The agent gave the name up (a share URL expired): free at once, no grace. False if `owner`
  // does not hold it.
  bool release(std::string_view name, const owner_id& owner);

  // Releases names whose grace ran out; returns how many.
  std::size_t expire(std::chrono::steady_clock::time_point now);
  std::size_t size();

  // Names held by a token, in grace or not.
  std::size_t count(std::string_view token_id);
  // Of those, how many are in grace: their agent left, and they wait for it to come back.
  std::size_t count_in_grace(std::string_view token_id);
  // True if the token already holds `name`, so claiming it again adds no service.
  bool held_by(std::string_view name, std::string_view token_id);
  // Releases at once, without grace, every name for which `drop(name, owner)` is true; returns
  // them.
  std::vector<std::string> release_if(
      const std::function<bool(const std::string& name, const owner_id& owner)>& drop);
  void set_grace(std::chrono::milliseconds grace);

 private:
  struct entry {
    owner_id owner;
    proto::tunnel_kind kind = proto::tunnel_kind::tcp_e2ee;
    std::string token_sha256;  // hex; empty: no visitor token asked
    bool plain_http = false;
    std::shared_ptr<const http::access_rules> rules;
    std::vector<std::weak_ptr<link::link>> links;
    std::chrono::steady_clock::time_point grace_until{};
    std::size_t next = 0;
  };

  std::mutex mutex_;
  std::map<std::string, entry, std::less<>> names_;
  std::chrono::milliseconds grace_;
};

}  // namespace burrow::relay
