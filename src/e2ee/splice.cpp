// The two directions of a splice, raced with `&&`: each ends at its own EOF, and the first error
// ends both.
#include "e2ee/splice.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <exception>
#include <memory>

#include "core/drained.hpp"
#include "link/stream.hpp"
#include "link/write_now.hpp"

namespace burrow::e2ee {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr std::size_t chunk = 16 * 1024;

struct splice_state {
  tcp::socket& socket;
  secure_stream& tls;
  bool failed = false;
};

// Wakes whichever direction still waits: the stream reset ends its TLS reads and writes, the
// cancel its socket operations.
void fail(splice_state* st) {
  if (st->failed) return;
  st->failed = true;
  st->tls.abort(proto::stream_status::cancelled);
  error_code ec;
  st->socket.cancel(ec);
}

asio::awaitable<void> socket_to_tls(splice_state* st) {
  auto buf = std::make_unique_for_overwrite<std::uint8_t[]>(chunk);
  bool drained = true;  // the last read left the socket empty (core/drained.hpp)
  while (!st->failed) {
    error_code ec;
    auto read = receive_when_ready(st->socket, asio::buffer(buf.get(), chunk), drained, ec);
    std::size_t n = co_await std::move(read);
    if (st->failed) co_return;
    if (ec == asio::error::eof) {
      auto shut = st->tls.shutdown_send(ec);
      co_await std::move(shut);
      if (ec) fail(st);
      co_return;
    }
    if (ec) {
      fail(st);
      co_return;
    }
    auto write = st->tls.write_all(asio::buffer(buf.get(), n), ec);
    co_await std::move(write);
    if (ec) {
      fail(st);
      co_return;
    }
  }
}

asio::awaitable<void> tls_to_socket(splice_state* st) {
  auto buf = std::make_unique_for_overwrite<std::uint8_t[]>(chunk);
  while (!st->failed) {
    error_code ec;
    auto read = st->tls.read_some(asio::buffer(buf.get(), chunk), ec);
    std::size_t n = co_await std::move(read);
    if (st->failed) co_return;
    if (ec == asio::error::eof) {
      st->socket.shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    if (ec) {
      fail(st);
      co_return;
    }
    auto all = asio::buffer(buf.get(), n);
    std::size_t sent = link::write_now(st->socket, all, ec);
    if (!ec && sent < all.size()) {
      auto write = asio::async_write(st->socket, all + sent, asio::as_tuple(asio::use_awaitable));
      auto [wec, written] = co_await std::move(write);
      ec = wec;
    }
    if (ec) {
      fail(st);
      co_return;
    }
  }
}

}  // namespace

asio::awaitable<void> splice(tcp::socket& socket, secure_stream& tls) {
  using namespace asio::experimental::awaitable_operators;
  splice_state st{socket, tls};
  error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  socket.non_blocking(true, ec);  // write_now must never wait
  if (ec) fail(&st);
  auto up = socket_to_tls(&st);
  auto down = tls_to_socket(&st);
  std::exception_ptr escaped;  // cancelled from outside, say: still tidy up, then pass it on
  try {
    co_await (std::move(up) && std::move(down));
  } catch (...) {
    escaped = std::current_exception();
    fail(&st);
  }
  if (st.failed) {
    socket.set_option(asio::socket_base::linger(true, 0), ec);  // close with an RST
    socket.close(ec);
  }
  tls.stream().finish();
  if (escaped) std::rethrow_exception(escaped);
}

}  // namespace burrow::e2ee
