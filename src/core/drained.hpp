// Reads that know when they leave a socket empty (TCP_INQ), so that the next read waits for
// readiness (async_wait) instead of trying a recv that would find nothing.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>

namespace burrow {

// Asks the kernel to report, with every read, what the socket still holds (TCP_INQ). A listener's
// setting passes to the sockets it accepts. False when the socket refused it; its reads then
// know it empty only when they find nothing.
bool report_queued_bytes(boost::asio::ip::tcp::socket& socket);
bool report_queued_bytes(boost::asio::ip::tcp::acceptor& acceptor);

// One non-blocking read on `socket`, which must be in non-blocking mode: bytes, or eof, or
// would_block. Sets `drained` when the socket is known to be empty afterwards (would_block, or
// TCP_INQ reported no byte and no FIN left); the caller then waits with
// socket.async_wait(wait_read) before it reads again. That wait re-arms the socket's epoll
// registration, so what came before it (bytes, a FIN, a reset, which TCP_INQ does not count)
// ends it at once.
std::size_t receive_some(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer,
                         bool& drained, boost::system::error_code& ec);

// receive_some() that waits for readiness while the socket is known to be empty: bytes, eof or an
// error, as async_read_some gives. `drained` carries over from one call to the next (start with
// true to wait before the first read).
boost::asio::awaitable<std::size_t> receive_when_ready(boost::asio::ip::tcp::socket& socket,
                                                       boost::asio::mutable_buffer buffer,
                                                       bool& drained,
                                                       boost::system::error_code& ec);

}  // namespace burrow
