// Two links joined by a real TLS connection on 127.0.0.1, in one io_context, so that tests can
// run end-to-end TLS through their streams; plus a runner that bounds every test by a deadline.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "link/event.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"

namespace burrow::test {

struct stream_ends {
  std::shared_ptr<link::stream> near;  // opened by the dialing link
  std::shared_ptr<link::stream> far;   // accepted by the other one
};

class link_pair {
 public:
  // `encryption` and `own_records`: what both links run, as if hello and welcome had agreed on
  // it (own records, as the relay and agent agree; false: OpenSSL's records, as with an older
  // peer).
  explicit link_pair(boost::asio::io_context& ioc, link::link_limits limits = {},
                     link::link_encryption encryption = link::link_encryption::full,
                     bool own_records = true);
  ~link_pair();
  link_pair(const link_pair&) = delete;
  link_pair& operator=(const link_pair&) = delete;

  boost::asio::awaitable<void> connect();
  // A new stream, seen from both ends, the far end already accepted; sealed when asked.
  boost::asio::awaitable<stream_ends> open(bool sealed = false);
  void close();
  // Bytes written into the near link's TCP connection behind its back, as an attacker on the
  // path would: they reach the far link between whole writes of the near one.
  bool inject(std::string_view bytes);
  // Before connect(): the near link's TCP connection gets a send buffer of `bytes` and the far
  // one a receive buffer of `bytes`, so the near link's writes fill them and must be finished
  // later, once the far link has read.
  void use_small_socket_buffers(int bytes);
  // Why the far link ended; empty while it runs.
  const std::string& far_ended() const { return far_ended_; }

  // Where both links run (their io_context's executor), before connect() too.
  boost::asio::any_io_executor executor() const { return ioc_.get_executor(); }
  link::link& near() { return *near_; }
  link::link& far() { return *far_; }

 private:
  boost::asio::awaitable<void> accept_far();
  boost::asio::awaitable<void> dial_near();

  boost::asio::io_context& ioc_;
  link::link_limits limits_;
  link::link_encryption encryption_;
  bool own_records_;
  int near_fd_ = -1;          // a duplicate of the near link's socket, for inject()
  int near_send_buffer_ = 0;  // 0: the kernel's default
  std::string far_ended_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<link::link> near_, far_;
  std::deque<std::shared_ptr<link::stream>> accepted_;
  link::event accepted_event_;
};

// Waits `d` on the calling coroutine's executor.
inline boost::asio::awaitable<void> pause(std::chrono::milliseconds d) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, d);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

namespace detail {
template <class T>
boost::asio::awaitable<T> with_links(link_pair* pair, boost::asio::awaitable<T> body) {
  auto connect = pair->connect();
  co_await std::move(connect);
  std::optional<T> result;
  std::exception_ptr failed;  // the links close either way, so the io_context runs dry
  try {
    result.emplace(co_await std::move(body));
  } catch (...) {
    failed = std::current_exception();
  }
  pair->close();
  if (failed) std::rethrow_exception(failed);
  co_return std::move(*result);
}
}  // namespace detail

// Connects the pair, runs `body`, closes the pair; nullopt when `limit` passed first.
template <class T>
std::optional<T> run_with_links(boost::asio::io_context& ioc, link_pair& pair,
                                boost::asio::awaitable<T> body,
                                std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto result = boost::asio::co_spawn(ioc, detail::with_links(&pair, std::move(body)),
                                      boost::asio::use_future);
  ioc.run_for(limit);
  if (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    pair.close();  // a test that hung: wind down what it left, briefly
    ioc.restart();
    ioc.run_for(std::chrono::seconds(2));
    return std::nullopt;
  }
  return result.get();
}

}  // namespace burrow::test
