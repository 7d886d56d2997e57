// Registering a connected socket with the reactor afresh. asio's async_connect adds EPOLLOUT to
// the socket's epoll registration and nothing ever takes it out; every later async_wait for
// reading re-arms the whole registration (EPOLL_CTL_MOD), so on a socket with room to write,
// epoll then wakes once per wait for the write edge, which no operation wanted: one blocking
// epoll_wait more per request on the agent's service side. Releasing the
// descriptor and assigning it again registers it for reading only, as an accepted socket is.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <unistd.h>

namespace burrow::link {

// For a connected socket of `protocol` (the family it was opened with) with no operation
// pending. On failure `ec` says why and the socket is of no further use (closed, or left without
// its descriptor): the caller drops the connection.
inline void register_afresh(boost::asio::ip::tcp::socket& socket,
                            const boost::asio::ip::tcp& protocol, boost::system::error_code& ec) {
  auto fd = socket.release(ec);
  if (ec) return;
  socket.assign(protocol, fd, ec);
  if (ec) ::close(fd);
}

}  // namespace burrow::link
