// The two directions of a splice, raced with `&&`: each ends at its own EOF, and the first error
// ends both.
#include "e2ee/splice.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <exception>
#include <memory>

#include "core/drained.hpp"
#include "core/read_buffer.hpp"
#include "link/stream.hpp"
#include "link/write_now.hpp"

namespace burrow::e2ee {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

std::atomic<std::size_t> held{0};    // buffers a direction has now
std::atomic<std::size_t> chosen{0};  // the sizes the directions read with

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
  read_buffer buf(held, chosen);
  bool drained = true;  // the last read left the socket empty (core/drained.hpp)
  while (!st->failed) {
    error_code ec;
    if (drained) {  // wait until readable, holding no buffer
      buf.give_back();
      auto [e] = co_await st->socket.async_wait(asio::ip::tcp::socket::wait_read,
                                                asio::as_tuple(asio::use_awaitable));
      if (st->failed) co_return;
      if (e) {
        fail(st);
        co_return;
      }
    }
    std::size_t n = receive_some(st->socket, buf.whole(), drained, ec);
    if (ec == asio::error::would_block) continue;
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
    auto write = st->tls.write_all(asio::buffer(buf.data(), n), ec);
    co_await std::move(write);
    if (ec) {
      fail(st);
      co_return;
    }
    buf.after_read(n);
  }
}

asio::awaitable<void> tls_to_socket(splice_state* st) {
  read_buffer buf(held, chosen);
  while (!st->failed) {
    error_code ec;
    if (!st->tls.readable_now()) {  // wait for the stream's bytes with no buffer
      buf.give_back();
      auto ready = st->tls.wait_readable();
      co_await std::move(ready);
      if (st->failed) co_return;
    }
    auto read = st->tls.read_some(buf.whole(), ec);
    std::size_t n = co_await std::move(read);
    if (st->failed) co_return;
    if (ec == asio::error::would_block) continue;  // a stale wake-up (only over a socket)
    if (ec == asio::error::eof) {
      st->socket.shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    if (ec) {
      fail(st);
      co_return;
    }
    auto all = asio::buffer(buf.data(), n);
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
    buf.after_read(n);
  }
}

}  // namespace

std::size_t splice_buffer_bytes() {
  return held.load(std::memory_order_relaxed);
}

std::size_t splice_read_sizes() {
  return chosen.load(std::memory_order_relaxed);
}

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
