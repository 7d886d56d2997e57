// One coroutine per connection: a handshake under a deadline, a count, then close.
#include "acme/challenge_responder.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "acme/tls_alpn.hpp"
#include "core/deadline.hpp"
#include "core/spawn.hpp"
#include "harness/use_tuple.hpp"

namespace burrow::test {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

asio::awaitable<boost::system::error_code> handshake(asio::ssl::stream<tcp::socket>* stream) {
  auto [ec] = co_await stream->async_handshake(asio::ssl::stream_base::server, use_tuple);
  co_return ec;
}

asio::awaitable<void> answer(tcp::socket socket, asio::ssl::context* tls,
                             challenge_responder::counters* seen) {
  asio::ssl::stream<tcp::socket> stream(std::move(socket), *tls);
  auto op = handshake(&stream);
  auto guarded = with_deadline(std::move(op), std::chrono::seconds(10));
  auto ec = co_await std::move(guarded);
  if (!ec || *ec) {
    ++seen->failed;
    co_return;
  }
  ++seen->handshakes;
  if (acme::answered_acme_challenge(stream.native_handle())) ++seen->answered;
  // RFC 8737: no application data on a validation connection; just close.
}

asio::awaitable<void> accept_loop(tcp::acceptor* acceptor, asio::ssl::context* tls,
                                  challenge_responder::counters* seen) {
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
    if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
    if (ec) continue;
    spawn_logged(acceptor->get_executor(), answer(std::move(socket), tls, seen),
                 "challenge responder");
  }
}

}  // namespace

challenge_responder::challenge_responder(asio::ssl::context& tls)
    : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
  port_ = acceptor_.local_endpoint().port();
  spawn_logged(io_.get_executor(), accept_loop(&acceptor_, &tls, &counters_),
               "challenge responder accept loop");
  thread_ = std::thread([this] { io_.run(); });
}

challenge_responder::~challenge_responder() {
  io_.stop();
  thread_.join();
}

}  // namespace burrow::test
