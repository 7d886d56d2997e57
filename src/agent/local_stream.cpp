// Connecting a stream to its local service, and the PROXY protocol header before its bytes.
#include "agent/local_stream.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/address.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"
#include "proto/proxy_protocol.hpp"

namespace burrow::agent {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

tcp::endpoint endpoint_or_unspecified(const std::string& address, std::uint16_t port) {
  boost::system::error_code ec;
  auto a = asio::ip::make_address(address, ec);
  return ec ? tcp::endpoint() : tcp::endpoint(a, port);
}

}  // namespace

asio::awaitable<std::optional<tcp::socket>> accept_with_local(service_context& ctx,
                                                              const service_config& svc,
                                                              local_target& target, link::link& l,
                                                              link::stream& s) {
  tcp::socket socket(l.executor());
  auto connected = co_await ctx.connect_local(socket, target.address);
  if (!connected || *connected) {
    bool refused = connected && *connected == asio::error::connection_refused;
    std::string why = connected ? connected->message() : "connect timed out";
    l.refuse(s, refused ? proto::stream_status::refused : proto::stream_status::unreachable, why);
    std::lock_guard lock(ctx.mutex);
    auto& limiter = target.errors;
    if (limiter.allow()) {
      auto swallowed = limiter.take_suppressed();
      spdlog::warn(
          "local service {} ({}) is not answering: {}; visitors are closed at once until "
          "it is back{}",
          format_host_port(svc.local_host, svc.local_port), svc.name, why,
          swallowed ? fmt::format(" ({} more since the last message)", swallowed) : "");
    }
    co_return std::nullopt;
  }
  if (s.is_reset()) {  // the visitor left while we were connecting
    l.stream_finished(s.id());
    co_return std::nullopt;
  }
  l.accept(s);
  co_return std::move(socket);
}

asio::awaitable<bool> send_proxy_header(tcp::socket& socket, const service_config& svc,
                                        const proto::open_metadata& meta, link::link& l,
                                        link::stream& s) {
  if (svc.proxy == proto::proxy_version::none) co_return true;
  auto header = proto::proxy_header(
      svc.proxy, endpoint_or_unspecified(meta.visitor_address, meta.visitor_port),
      endpoint_or_unspecified(meta.relay_address, meta.relay_port));
  auto [ec, n] =
      co_await asio::async_write(socket, asio::buffer(header), asio::as_tuple(asio::use_awaitable));
  if (ec) {
    s.reset(proto::stream_status::refused);
    l.stream_finished(s.id());
    co_return false;
  }
  co_return true;
}

}  // namespace burrow::agent
