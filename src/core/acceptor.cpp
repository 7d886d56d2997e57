// Listeners and socket hand-off between io_contexts.
#include "core/acceptor.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>

#include "core/drained.hpp"

namespace burrow {

namespace asio = boost::asio;
using asio::ip::tcp;

std::unique_ptr<tcp::acceptor> make_acceptor(asio::any_io_executor ex, const tcp::endpoint& ep) {
  auto a = std::make_unique<tcp::acceptor>(ex);
  a->open(ep.protocol());
  a->set_option(tcp::acceptor::reuse_address(true));
  if (ep.address().is_v6()) a->set_option(asio::ip::v6_only(true));
  a->bind(ep);
  a->listen(asio::socket_base::max_listen_connections);
  // Every listener carries interactive traffic: small writes go out at once.
  a->set_option(tcp::no_delay(true));
  // Accepted sockets report what they still hold with each read, so a read that empties one
  // needs no second read to learn it (core/drained.hpp).
  report_queued_bytes(*a);
  return a;
}

void set_keepalive(tcp::acceptor& acceptor, std::chrono::seconds idle) {
  if (!acceptor.is_open()) return;
  int fd = acceptor.native_handle();
  int on = idle.count() > 0 ? 1 : 0;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  if (!on) return;
  int idle_s = static_cast<int>(std::min<std::chrono::seconds::rep>(idle.count(), 32767));
  int interval = std::max(1, idle_s / 6);
  int probes = 6;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

void move_socket(tcp::socket socket, asio::any_io_executor ex,
                 std::function<void(tcp::socket)> then) {
  if (socket.get_executor() == ex) {
    then(std::move(socket));
    return;
  }
  boost::system::error_code ec;
  auto protocol = socket.local_endpoint(ec).protocol();
  if (ec) return;
  int fd = socket.release(ec);
  if (ec) return;
  asio::post(ex, [ex, fd, protocol, then = std::move(then)]() mutable {
    then(tcp::socket(ex, protocol, fd));
  });
}

}  // namespace burrow
