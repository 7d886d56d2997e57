// Stream bridge: two streams on one thread joined with no coroutine; on two threads, one
// coroutine per direction, each on the thread of the stream it reads.
#include "relay/stream_bridge.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <vector>

#include "core/run_on.hpp"
#include "link/stream.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using link::stream;

namespace {

// A chunk is what one stream has queued, at most this much: credit bounds it anyway.
constexpr std::size_t max_chunk = 256 * 1024;

asio::awaitable<boost::system::error_code> deliver(std::shared_ptr<stream> to,
                                                   std::vector<std::uint8_t> bytes) {
  boost::system::error_code ec;
  co_await to->write_all(bytes, ec);
  co_return ec;
}

asio::awaitable<void> half_close(std::shared_ptr<stream> s) {
  s->shutdown_send();
  co_return;
}

asio::awaitable<void> abort(std::shared_ptr<stream> s) {
  s->reset(proto::stream_status::cancelled);
  co_return;
}

asio::awaitable<void> finish(std::shared_ptr<stream> s) {
  s->finish();
  co_return;
}

// One direction, on `from`'s executor: a chunk read here, written on `to`'s thread.
asio::awaitable<void> carry(std::shared_ptr<stream> from, std::shared_ptr<stream> to) {
  auto to_ex = to->executor();
  for (;;) {
    std::vector<std::uint8_t> chunk;
    boost::system::error_code ec;
    co_await from->read_chunk(chunk, max_chunk, ec);
    if (ec == asio::error::eof) {
      auto closing = run_on(to_ex, half_close(to));
      co_await std::move(closing);
      co_return;
    }
    if (ec) {
      auto aborting = run_on(to_ex, abort(to));
      co_await std::move(aborting);
      co_return;
    }
    auto delivering = run_on(to_ex, deliver(to, std::move(chunk)));
    auto sent = co_await std::move(delivering);
    if (sent) {
      from->reset(proto::stream_status::cancelled);
      co_return;
    }
  }
}

}  // namespace

asio::awaitable<void> bridge_streams(std::shared_ptr<stream> a, std::shared_ptr<stream> b) {
  using namespace asio::experimental::awaitable_operators;
  auto b_ex = b->executor();
  auto forward = carry(a, b);
  auto backward = run_on(b_ex, carry(b, a));
  co_await (std::move(forward) && std::move(backward));
  a->finish();
  auto finishing = run_on(b_ex, finish(b));
  co_await std::move(finishing);
}

bool join_streams(const std::shared_ptr<stream>& a, const std::shared_ptr<stream>& b,
                  std::function<void()> done) {
  if (a->executor() != b->executor()) return false;
  stream::join(a, b, std::move(done));
  return true;
}

}  // namespace burrow::relay
