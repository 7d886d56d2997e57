// Stream bridge: one coroutine per direction, each on the thread of the stream it reads; or,
// on one thread, the two streams joined with no coroutine.
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

// Lets `from` hand its bytes straight to `to` from its link's reader while the two share a
// thread, for as long as the carrying coroutine lives.
struct forwarding {
  forwarding(stream& from, stream& to) : from(from) {
    if (from.executor() == to.executor()) from.forward_to(&to);
  }
  ~forwarding() { from.forward_to(nullptr); }
  forwarding(const forwarding&) = delete;
  forwarding& operator=(const forwarding&) = delete;
  stream& from;
};

// One direction, on `from`'s executor.
asio::awaitable<void> carry(std::shared_ptr<stream> from, std::shared_ptr<stream> to) {
  auto to_ex = to->executor();
  forwarding direct(*from, *to);
  if (from->executor() == to_ex) {
    // One thread: straight from one stream's queue into the other's link.
    boost::system::error_code ec;
    co_await from->pass_to(*to, ec);
    if (ec == asio::error::eof) {
      to->shutdown_send();
    } else {
      to->reset(proto::stream_status::cancelled);
      from->reset(proto::stream_status::cancelled);
    }
    co_return;
  }
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
