// register_afresh: after it, the reactor's epoll registration of a connected socket no longer
// holds EPOLLOUT, read from the kernel's own account (/proc/self/fdinfo of asio's epoll
// descriptor), and the socket still carries bytes both ways.
#include "link/reregister.hpp"

#include <gtest/gtest.h>
#include <sys/epoll.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace burrow::link {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// The events every epoll instance of this process registered for `fd`, ORed together; nothing
// when no instance holds it.
std::optional<unsigned> epoll_events_for(int fd) {
  std::optional<unsigned> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || target.string() != "anon_inode:[eventpoll]") continue;
    std::ifstream info("/proc/self/fdinfo/" + entry.path().filename().string());
    for (std::string line; std::getline(info, line);) {
      std::istringstream in(line);
      std::string key, events_key;
      int tfd = -1;
      unsigned events = 0;
      if (in >> key >> tfd >> events_key >> std::hex >> events && key == "tfd:" && tfd == fd)
        found = found.value_or(0) | events;
    }
  }
  return found;
}

struct connected {
  explicit connected(asio::io_context& io)
      : acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        client(io),
        server(io) {
    std::optional<boost::system::error_code> result;
    client.async_connect(acceptor.local_endpoint(),
                         [&](boost::system::error_code ec) { result = ec; });
    acceptor.accept(server);
    io.run_for(std::chrono::seconds(5));
    io.restart();
    EXPECT_TRUE(result && !*result) << "connect did not finish";
  }
  tcp::acceptor acceptor;
  tcp::socket client, server;
};

// Waits for the client to become readable (re-arming its registration), then reads what the
// server sent.
std::string wait_and_read(asio::io_context& io, tcp::socket& socket) {
  std::string got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [ec] =
            co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;
        char buf[64];
        std::size_t n = socket.read_some(asio::buffer(buf), ec);
        if (!ec) got.assign(buf, n);
      },
      asio::detached);
  io.run_for(std::chrono::seconds(5));
  io.restart();
  return got;
}

TEST(Reregister, AsyncConnectLeavesWriteInterestThatRegisteringAfreshRemoves) {
  asio::io_context io;
  connected c(io);
  const int fd = c.client.native_handle();
  asio::write(c.server, asio::buffer(std::string("one")));
  EXPECT_EQ(wait_and_read(io, c.client), "one");
  auto before = epoll_events_for(fd);
  ASSERT_TRUE(before);
  EXPECT_TRUE(*before & EPOLLOUT) << "asio no longer keeps EPOLLOUT after a connect: "
                                     "register_afresh may no longer be needed";

  boost::system::error_code ec;
  register_afresh(c.client, tcp::v4(), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(c.client.is_open());
  EXPECT_EQ(c.client.native_handle(), fd);

  asio::write(c.server, asio::buffer(std::string("two")));
  EXPECT_EQ(wait_and_read(io, c.client), "two");
  auto after = epoll_events_for(fd);
  ASSERT_TRUE(after);
  EXPECT_TRUE(*after & EPOLLIN);
  EXPECT_FALSE(*after & EPOLLOUT);

  asio::write(c.client, asio::buffer(std::string("back")));
  char buf[8];
  std::size_t n = asio::read(c.server, asio::buffer(buf, 4), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(std::string(buf, n), "back");
}

TEST(Reregister, AClosedSocketIsAnError) {
  asio::io_context io;
  tcp::socket s(io);
  boost::system::error_code ec;
  register_afresh(s, tcp::v4(), ec);
  EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace burrow::link
