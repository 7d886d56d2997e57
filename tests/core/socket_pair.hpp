// Two ends of a loopback TCP connection, both non-blocking, for the drained-read tests.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/drained.hpp"

namespace burrow::test {

struct socket_pair {
  // `inq`: the listener asks for TCP_INQ, and the accepted `server` end inherits it.
  explicit socket_pair(boost::asio::io_context& io, bool inq = false) : client(io), server(io) {
    using boost::asio::ip::tcp;
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    if (inq) {
      EXPECT_TRUE(report_queued_bytes(acceptor));
    }
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    client.non_blocking(true);
    server.non_blocking(true);
  }
  boost::asio::ip::tcp::socket client;
  boost::asio::ip::tcp::socket server;
};

}  // namespace burrow::test
