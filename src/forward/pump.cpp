// The two directions of a pump, raced with `&&`: each ends at its own EOF, and the first error
// ends both.
#include "forward/pump.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <exception>

#include "core/drained.hpp"
#include "core/read_buffer.hpp"
#include "link/write_now.hpp"

namespace burrow::forward {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

std::atomic<std::size_t> pump_held{0};
std::atomic<std::size_t> pump_chosen{0};

struct pump_state {
  tcp::socket& visitor;
  tcp::socket& target;
  pump_result result;
};

// Wakes whichever direction still waits.
void fail(pump_state* st) {
  if (st->result.failed) return;
  st->result.failed = true;
  error_code ec;
  st->visitor.cancel(ec);
  st->target.cancel(ec);
}

asio::awaitable<void> one_way(pump_state* st, tcp::socket& from, tcp::socket& to,
                              std::uint64_t& moved) {
  read_buffer buf(pump_held, pump_chosen);
  bool drained = true;  // the last read left the socket empty (core/drained.hpp)
  while (!st->result.failed) {
    error_code ec;
    if (drained) {  // wait until readable, holding no buffer
      buf.give_back();
      auto [e] =
          co_await from.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
      if (st->result.failed) co_return;
      if (e) {
        fail(st);
        co_return;
      }
    }
    const std::size_t n = receive_some(from, buf.whole(), drained, ec);
    if (ec == asio::error::would_block) continue;
    if (ec == asio::error::eof) {
      to.shutdown(tcp::socket::shutdown_send, ec);
      co_return;
    }
    if (ec) {
      fail(st);
      co_return;
    }
    auto all = asio::buffer(buf.data(), n);
    const std::size_t sent = link::write_now(to, all, ec);
    if (!ec && sent < n) {
      auto [wec, written] =
          co_await asio::async_write(to, all + sent, asio::as_tuple(asio::use_awaitable));
      ec = wec;
    }
    if (ec) {
      fail(st);
      co_return;
    }
    moved += n;
    buf.after_read(n);
  }
}

}  // namespace

std::size_t pump_buffer_bytes() {
  return pump_held.load(std::memory_order_relaxed);
}

asio::awaitable<pump_result> pump(tcp::socket& visitor, tcp::socket& target) {
  using namespace asio::experimental::awaitable_operators;
  pump_state st{visitor, target, {}};
  error_code ec;
  for (auto* s : {&visitor, &target}) {
    s->set_option(tcp::no_delay(true), ec);
    if (!ec) s->non_blocking(true, ec);  // write_now must never wait
    if (ec) fail(&st);
  }
  auto in = one_way(&st, visitor, target, st.result.bytes_in);
  auto out = one_way(&st, target, visitor, st.result.bytes_out);
  std::exception_ptr escaped;  // cancelled from outside: still tidy up, then pass it on
  try {
    co_await (std::move(in) && std::move(out));
  } catch (...) {
    escaped = std::current_exception();
    fail(&st);
  }
  if (st.result.failed) {
    for (auto* s : {&visitor, &target}) {
      s->set_option(asio::socket_base::linger(true, 0), ec);  // close with an RST
      s->close(ec);
    }
  }
  if (escaped) std::rethrow_exception(escaped);
  co_return st.result;
}

}  // namespace burrow::forward
