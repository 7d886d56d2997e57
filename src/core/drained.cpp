// Reads with TCP_INQ; see drained.hpp.
#include "core/drained.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>

namespace burrow {

namespace {

bool set_inq(int fd) {
  int on = 1;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
}

}  // namespace

bool report_queued_bytes(boost::asio::ip::tcp::socket& socket) {
  return socket.is_open() && set_inq(socket.native_handle());
}

bool report_queued_bytes(boost::asio::ip::tcp::acceptor& acceptor) {
  return acceptor.is_open() && set_inq(acceptor.native_handle());
}

std::size_t receive_some(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer,
                         bool& drained, boost::system::error_code& ec) {
  drained = false;
  ec = {};
  if (!socket.is_open()) {
    ec = boost::asio::error::bad_descriptor;
    return 0;
  }
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket.native_handle(), &msg, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
      // Nothing there, not even a FIN (that reads as 0).
      ec = boost::asio::error::would_block;
      drained = true;
    }
    return 0;
  }
  if (n == 0) {
    if (buffer.size() > 0) ec = boost::asio::error::eof;
    return 0;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != IPPROTO_TCP || c->cmsg_type != TCP_CM_INQ) continue;
    int queued = 0;
    std::memcpy(&queued, CMSG_DATA(c), sizeof queued);
    // 0: no byte and no FIN left (a short read alone would not say: a FIN may have come with the
    // bytes). Without the report (TCP_INQ off) nothing is known.
    if (queued == 0) drained = true;
  }
  return static_cast<std::size_t>(n);
}

boost::asio::awaitable<std::size_t> receive_when_ready(boost::asio::ip::tcp::socket& socket,
                                                       boost::asio::mutable_buffer buffer,
                                                       bool& drained,
                                                       boost::system::error_code& ec) {
  for (;;) {
    if (drained) {
      auto [e] = co_await socket.async_wait(boost::asio::ip::tcp::socket::wait_read,
                                            boost::asio::as_tuple(boost::asio::use_awaitable));
      if (e) {
        ec = e;
        co_return 0;
      }
    }
    std::size_t n = receive_some(socket, buffer, drained, ec);
    if (ec != boost::asio::error::would_block) co_return n;
  }
}

}  // namespace burrow
