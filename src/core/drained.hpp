// Reads that trust epoll's edge. asio 1.81 registers every socket with epoll edge-triggered, yet
// starts every read with a recv of its own (it fails with EAGAIN when the last read emptied the
// socket) and every async_wait with an EPOLL_CTL_MOD that re-arms the registration: one system
// call more per read that has to wait, 4 of 16 per request through relay and agent at one
// connection (docs/performance.md).
//
// A socket is known to be empty only when the kernel says so: with TCP_INQ set, each recvmsg
// reports how many bytes are still queued, and reports 1 when the peer's FIN is there even with
// no bytes (the kernel's tcp_inq_hint, made for this use). A short read proves nothing: a FIN
// that came with the data raised no edge of its own, and a wait after that read would never end.
// Nor does TCP_INQ's 0 after a reset (no FIN, so it counts nothing): when epoll's last report for
// the socket was a hang-up or an error, the socket is not marked and the next read finds the end.
//
// receive_some() reads, and when the socket is left empty (or the read found nothing) tells asio's
// reactor, in the same call, that trying a read before epoll's next edge is pointless. Any edge
// the reactor takes after that (new bytes, a FIN, an error) tells it the opposite, as asio does
// itself, so nothing that arrives later can be missed; async_wait_readable() then waits for that
// edge with no system call, or completes at once when the edge has come.
//
// What asio has no public word for, drained.cpp reaches into its reactor for: only with the Boost
// this was written against (1.81, Debian 12's), on its epoll reactor. Built against anything else
// these functions fall back to asio's own operations.
#pragma once

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_DISABLE_EPOLL)
#define BURROW_DRAINED_READS 1
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/reactive_wait_op.hpp>
#else
#define BURROW_DRAINED_READS 0
#endif

namespace burrow {

// Whether this build can tell asio's reactor about a drained socket.
constexpr bool drained_reads_supported = BURROW_DRAINED_READS == 1;

// Asks the kernel to report, with every read, what the socket still holds (TCP_INQ). A listener's
// setting passes to the sockets it accepts. False when the socket refused it; its reads then work
// as asio's do.
bool report_queued_bytes(boost::asio::ip::tcp::socket& socket);
bool report_queued_bytes(boost::asio::ip::tcp::acceptor& acceptor);

// One non-blocking read on `socket`, which must be in non-blocking mode: bytes, or eof, or
// would_block. Sets `drained` when the socket is known to be empty afterwards (would_block, or
// TCP_INQ reported nothing left and no FIN, and epoll has not reported a reset); the next
// async_wait_readable then waits for epoll's next edge. Only for a socket whose io_context one
// thread runs, as every io_context of burrow's is (core/workers.hpp).
std::size_t receive_some(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer,
                         bool& drained, boost::system::error_code& ec);

// receive_some() that waits for the edge while the socket is known to be empty: bytes, eof or an
// error, as async_read_some gives. `drained` carries over from one call to the next (start with
// true: a new socket's wait completes at once).
boost::asio::awaitable<std::size_t> receive_when_ready(boost::asio::ip::tcp::socket& socket,
                                                       boost::asio::mutable_buffer buffer,
                                                       bool& drained,
                                                       boost::system::error_code& ec);

// Tells the reactor that `socket` is empty until its next edge; receive_some() does this itself.
// Call only right after a read that proved it, before the reactor can run. A closed socket is
// left alone.
void mark_drained(boost::asio::ip::tcp::socket& socket);
// As mark_drained, after a read that TCP_INQ reported empty, unless the last readiness epoll
// reported for the socket was a hang-up or an error: a reset brings no FIN for TCP_INQ to count
// and no edge after the one already taken, so the socket is left for the next read to find
// finished. Returns whether it marked the socket.
bool mark_drained_unless_hung_up(boost::asio::ip::tcp::socket& socket);

#if BURROW_DRAINED_READS
namespace drained_detail {

using reactor = boost::asio::detail::epoll_reactor;

struct registration {
  reactor* owner;
  reactor::per_descriptor_data* data;  // the socket's own, which outlives its operations
  int descriptor;
};
// Null owner for a closed socket.
registration registration_of(boost::asio::ip::tcp::socket& socket);

// Per-operation cancellation of the wait, as asio's own socket operations have it.
class cancellation {
 public:
  cancellation(const registration& r) : r_(r) {}
  void operator()(boost::asio::cancellation_type_t type) {
    using boost::asio::cancellation_type;
    if (!!(type &
           (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
      r_.owner->cancel_ops_by_key(r_.descriptor, *r_.data, reactor::read_op, this);
  }

 private:
  registration r_;
};

}  // namespace drained_detail
#endif

// Waits until `socket` is readable, as async_wait(wait_read) does, but never re-arms its epoll
// registration: marked drained, the wait takes epoll's next edge; else it completes at once and
// the caller's read finds out. Completes with an error_code.
template <typename Token>
auto async_wait_readable(boost::asio::ip::tcp::socket& socket, Token&& token) {
#if BURROW_DRAINED_READS
  return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
      [&socket](auto handler) {
        using handler_type = decltype(handler);
        using op =
            boost::asio::detail::reactive_wait_op<handler_type, boost::asio::any_io_executor>;
        auto r = drained_detail::registration_of(socket);
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        typename op::ptr p = {boost::asio::detail::addressof(handler), op::ptr::allocate(handler),
                              0};
        p.p = new (p.v) op(boost::system::error_code(), handler, socket.get_executor());
        if (!r.owner) {
          p.p->ec_ = boost::asio::error::bad_descriptor;
          boost::asio::use_service<drained_detail::reactor>(
              boost::asio::query(socket.get_executor(), boost::asio::execution::context))
              .post_immediate_completion(p.p, false);
        } else {
          if (slot.is_connected())
            p.p->cancellation_key_ = &slot.template emplace<drained_detail::cancellation>(r);
          // Speculative: asio runs the wait at once (a wait needs no system call) unless the
          // socket is marked drained, and queues it without touching epoll.
          r.owner->start_op(drained_detail::reactor::read_op, r.descriptor, *r.data, p.p, false,
                            true);
        }
        p.v = p.p = 0;
      },
      token);
#else
  return socket.async_wait(boost::asio::ip::tcp::socket::wait_read, std::forward<Token>(token));
#endif
}

}  // namespace burrow
