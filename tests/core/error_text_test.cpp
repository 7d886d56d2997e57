// error_text: the reason users read, without Boost's source location.
#include "core/error_text.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <stdexcept>

namespace burrow {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TEST(ErrorText, ASystemErrorFromAsioIsItsMessageAlone) {
  asio::io_context io;
  tcp::acceptor first(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::acceptor second(io);
  second.open(tcp::v4());
  try {
    second.bind(first.local_endpoint());  // throws: the port is taken
    FAIL() << "bind to a taken port succeeded";
  } catch (const std::exception& e) {
    ASSERT_NE(std::string(e.what()).find("[system:"), std::string::npos)
        << "Boost no longer adds a location; this test no longer shows anything: " << e.what();
    EXPECT_EQ(error_text(e), "Address already in use");
  }
}

TEST(ErrorText, OtherExceptionsKeepTheirText) {
  EXPECT_EQ(error_text(std::runtime_error("listen address 'x' is not HOST:PORT")),
            "listen address 'x' is not HOST:PORT");
  EXPECT_EQ(
      error_text(std::system_error(std::make_error_code(std::errc::permission_denied), "open")),
      std::make_error_code(std::errc::permission_denied).message());
}

}  // namespace
}  // namespace burrow
