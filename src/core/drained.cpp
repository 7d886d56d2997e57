// Reads with TCP_INQ, and the two places drained.hpp reaches into asio 1.81's epoll reactor: a
// socket's per-descriptor data (basic_socket keeps it protected) and the flag that makes a read
// try a recv first (descriptor_state keeps it private).
#include "core/drained.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>

#if BURROW_DRAINED_READS
#include <boost/asio/detail/conditionally_enabled_mutex.hpp>
#endif

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
      // Nothing there, not even a FIN (that reads as 0): empty until the next edge.
      ec = boost::asio::error::would_block;
      drained = true;
      mark_drained(socket);
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
    // 0: no byte and no FIN left. Without the report (TCP_INQ off) nothing is known.
    if (queued == 0) drained = mark_drained_unless_hung_up(socket);
  }
  return static_cast<std::size_t>(n);
}

boost::asio::awaitable<std::size_t> receive_when_ready(boost::asio::ip::tcp::socket& socket,
                                                       boost::asio::mutable_buffer buffer,
                                                       bool& drained,
                                                       boost::system::error_code& ec) {
  for (;;) {
    if (drained) {
      auto [e] =
          co_await async_wait_readable(socket, boost::asio::as_tuple(boost::asio::use_awaitable));
      if (e) {
        ec = e;
        co_return 0;
      }
    }
    std::size_t n = receive_some(socket, buffer, drained, ec);
    if (ec != boost::asio::error::would_block) co_return n;
  }
}

#if BURROW_DRAINED_READS
namespace drained_detail {
namespace {

namespace asio = boost::asio;
using basic_tcp_socket = asio::basic_socket<asio::ip::tcp, asio::any_io_executor>;
using state = reactor::descriptor_state;

// A derived class may name a protected member, and the pointer it takes to it works on any
// socket.
struct socket_access : asio::ip::tcp::socket {
  using basic_tcp_socket::impl_;
};

// Naming a private member is allowed in an explicit instantiation: the friend function it
// defines hands out the pointer to that member.
template <typename Tag, typename Tag::type Member>
struct expose {
  friend typename Tag::type member(Tag) { return Member; }
};
struct try_speculative_tag {
  using type = bool (state::*)[reactor::max_ops];
  friend type member(try_speculative_tag);
};
struct mutex_tag {
  using type = asio::detail::conditionally_enabled_mutex state::*;
  friend type member(mutex_tag);
};
struct reactor_tag {
  using type = reactor* state::*;
  friend type member(reactor_tag);
};
// The events of the last epoll_wait that reported the socket (the descriptor state keeps them
// in its operation's task result, which perform_io reads and does not clear).
struct events_tag {
  using type = unsigned int asio::detail::scheduler_operation::*;
  friend type member(events_tag);
};
template struct expose<try_speculative_tag, &state::try_speculative_>;
template struct expose<mutex_tag, &state::mutex_>;
template struct expose<reactor_tag, &state::reactor_>;
template struct expose<events_tag, &asio::detail::scheduler_operation::task_result_>;

}  // namespace

registration registration_of(asio::ip::tcp::socket& socket) {
  auto& impl = (socket.*(&socket_access::impl_)).get_implementation();
  if (!socket.is_open() || !impl.reactor_data_) return {nullptr, nullptr, -1};
  // The registration knows its reactor; asking the context for it (use_service) takes a lock and
  // a search, and cost 3 % of a busy agent's instructions (docs/performance.md).
  return {impl.reactor_data_->*member(reactor_tag{}), &impl.reactor_data_, impl.socket_};
}

}  // namespace drained_detail

void mark_drained(boost::asio::ip::tcp::socket& socket) {
  auto r = drained_detail::registration_of(socket);
  if (!r.owner) return;
  drained_detail::state* s = *r.data;
  boost::asio::detail::conditionally_enabled_mutex::scoped_lock lock(
      s->*member(drained_detail::mutex_tag{}));
  (s->*member(drained_detail::try_speculative_tag{}))[drained_detail::reactor::read_op] = false;
}

bool mark_drained_unless_hung_up(boost::asio::ip::tcp::socket& socket) {
  auto r = drained_detail::registration_of(socket);
  if (!r.owner) return true;
  drained_detail::state* s = *r.data;
  boost::asio::detail::conditionally_enabled_mutex::scoped_lock lock(
      s->*member(drained_detail::mutex_tag{}));
  // A reset leaves no FIN for TCP_INQ to count, and once epoll has reported it no edge follows:
  // such a socket is not empty but finished, and the next read says so. (A state asio reuses
  // for a new socket may still hold its last socket's events until the first edge: that costs
  // one read that finds nothing, which then marks the socket.)
  // descriptor_state derives privately from its operation: only a C-style cast names that base.
  const auto& op = (const boost::asio::detail::scheduler_operation&)(*s);
  if (op.*member(drained_detail::events_tag{}) & (EPOLLHUP | EPOLLERR)) return false;
  (s->*member(drained_detail::try_speculative_tag{}))[drained_detail::reactor::read_op] = false;
  return true;
}
#else
void mark_drained(boost::asio::ip::tcp::socket&) {}
bool mark_drained_unless_hung_up(boost::asio::ip::tcp::socket&) {
  return true;
}
#endif

}  // namespace burrow
