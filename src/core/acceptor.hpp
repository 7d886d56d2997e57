// Listening sockets and handing accepted connections to another thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace burrow {

// Bound and listening, SO_REUSEADDR, IPv6 sockets v6-only; throws system_error. Linux copies a
// listener's socket options to every socket it accepts, so what all of them need is set here
// once, not with a system call per connection: TCP_NODELAY and TCP_INQ (core/drained.hpp).
std::unique_ptr<boost::asio::ip::tcp::acceptor> make_acceptor(
    boost::asio::any_io_executor ex, const boost::asio::ip::tcp::endpoint& ep);

// TCP keepalive for the connections `acceptor` takes from now on (the kernel copies the options
// when a connection's handshake completes, so those already accepted or waiting in the queue keep
// what they had): after `idle` without traffic, six probes `idle / 6` apart (at least 1 s); zero
// turns it off. Errors are ignored: a listener whose sockets get no keepalive still serves.
void set_keepalive(boost::asio::ip::tcp::acceptor& acceptor, std::chrono::seconds idle);

// Re-homes `socket` on `ex` (a socket's executor cannot change, its descriptor can move) and
// calls `then` there with it. Nothing happens if the descriptor cannot be released.
void move_socket(boost::asio::ip::tcp::socket socket, boost::asio::any_io_executor ex,
                 std::function<void(boost::asio::ip::tcp::socket)> then);

}  // namespace burrow
