// Listening sockets and handing accepted connections to another thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>

namespace burrow {

// Bound and listening, SO_REUSEADDR, IPv6 sockets v6-only; throws system_error.
std::unique_ptr<boost::asio::ip::tcp::acceptor> make_acceptor(
    boost::asio::any_io_executor ex, const boost::asio::ip::tcp::endpoint& ep);

// Re-homes `socket` on `ex` (a socket's executor cannot change, its descriptor can move) and
// calls `then` there with it. Nothing happens if the descriptor cannot be released.
void move_socket(boost::asio::ip::tcp::socket socket, boost::asio::any_io_executor ex,
                 std::function<void(boost::asio::ip::tcp::socket)> then);

}  // namespace burrow
