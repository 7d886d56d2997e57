// Moves bytes both ways between a local TCP connection and an end-to-end TLS session, with TCP's
// half-close carried over as close_notify plus FIN.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>

#include "e2ee/secure_stream.hpp"

namespace burrow::e2ee {

// Runs until both directions have finished: the socket's EOF becomes tls.shutdown_send(), the
// peer's close_notify becomes a shutdown of the socket's sending side. An error on either side
// aborts both: the stream is reset and the socket closed with an RST. Ends with
// tls.stream().finish(). The socket must live on the stream's executor; the handshake is done.
boost::asio::awaitable<void> splice(boost::asio::ip::tcp::socket& socket, secure_stream& tls);

// What every splice in this process holds for its reads right now: a direction has a buffer only
// while it has bytes to move, none while it waits for them.
std::size_t splice_buffer_bytes();
// What they would hold if every direction were reading at once: 4 KiB each way per visitor,
// 16 KiB for a direction once a read has filled its buffer.
std::size_t splice_read_sizes();

}  // namespace burrow::e2ee
