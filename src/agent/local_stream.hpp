// A stream joined to a new connection to its local service: what the kinds that hand a visitor's
// bytes to the service as they are (public port, end to end, passthrough) share.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <optional>

#include "agent/agent_config.hpp"
#include "agent/service_context.hpp"
#include "core/log.hpp"
#include "proto/control.hpp"

namespace burrow::link {
class link;
class stream;
}  // namespace burrow::link

namespace burrow::agent {

// Where a service's visitors go on this machine.
struct local_target {
  boost::asio::ip::tcp::endpoint address;
  log_limiter errors{std::chrono::seconds(10)};  // guarded by the context's mutex
};

// Connects to the local service, then accepts the stream: the connected socket, or none when the
// stream was refused (the service is not answering: logged, at most once per burst) or the
// visitor left meanwhile.
boost::asio::awaitable<std::optional<boost::asio::ip::tcp::socket>> accept_with_local(
    service_context& ctx, const service_config& svc, local_target& target, link::link& l,
    link::stream& s);

// Writes the PROXY protocol header the service asked for, if any: false (the stream reset) when
// the local service is gone.
boost::asio::awaitable<bool> send_proxy_header(boost::asio::ip::tcp::socket& socket,
                                               const service_config& svc,
                                               const proto::open_metadata& meta, link::link& l,
                                               link::stream& s);

}  // namespace burrow::agent
