// The duplex adapters: TCP socket, TLS (in a link stream or over a socket), and a bare link stream.
#include "http/duplex.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "core/drained_reader.hpp"
#include "e2ee/secure_stream.hpp"
#include "link/stream.hpp"
#include "link/write_now.hpp"

namespace burrow::http {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Where an adapter only passes a call on, it returns the callee's awaitable instead of awaiting
// it in a coroutine of its own: one coroutine frame less on every read and write.
class tcp_duplex final : public duplex {
 public:
  explicit tcp_duplex(asio::ip::tcp::socket& s) : socket_(s), reader_(s) {
    error_code ec;
    s.non_blocking(true, ec);
    non_blocking_ = !ec;  // write_now and the reader's recv must never wait
  }
  bool readable_now() const override { return non_blocking_ && !reader_.drained(); }
  asio::awaitable<void> wait_readable() override {
    if (non_blocking_) return reader_.wait_readable();
    return socket_.async_wait(asio::ip::tcp::socket::wait_read,
                              asio::redirect_error(asio::use_awaitable, wait_error_));
  }
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer b, error_code& ec) override {
    if (non_blocking_) return reader_.read_some(b, ec);
    return read_waiting(b, ec);
  }
  asio::awaitable<void> write_all(asio::const_buffer b, error_code& ec) override {
    std::size_t sent = non_blocking_ ? link::write_now(socket_, b, ec) : 0;
    if (ec || sent == b.size()) co_return;
    auto [e, n] =
        co_await asio::async_write(socket_, b + sent, asio::as_tuple(asio::use_awaitable));
    ec = e;
  }
  asio::awaitable<void> shutdown_send(error_code& ec) override {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    co_return;
  }
  void abort() override {
    error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }

 private:
  asio::awaitable<std::size_t> read_waiting(asio::mutable_buffer b, error_code& ec) {
    auto [e, n] = co_await socket_.async_read_some(b, asio::as_tuple(asio::use_awaitable));
    ec = e;
    co_return n;
  }

  asio::ip::tcp::socket& socket_;
  drained_reader reader_;  // drained reads (core/drained_reader.hpp), when non-blocking
  bool non_blocking_ = false;
  error_code wait_error_;  // the read that follows finds the same error itself
};

class tls_duplex final : public duplex {
 public:
  tls_duplex(e2ee::secure_stream& tls, bool truncation_is_eof)
      : tls_(tls), truncation_is_eof_(truncation_is_eof) {}
  bool readable_now() const override { return tls_.readable_now(); }
  asio::awaitable<void> wait_readable() override { return tls_.wait_readable(); }
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer b, error_code& ec) override {
    if (!truncation_is_eof_) return tls_.read_some(b, ec);
    return read_truncation_as_eof(b, ec);
  }
  asio::awaitable<void> write_all(asio::const_buffer b, error_code& ec) override {
    return tls_.write_all(b, ec);
  }
  asio::awaitable<void> shutdown_send(error_code& ec) override { return tls_.shutdown_send(ec); }
  void abort() override { tls_.abort(proto::stream_status::cancelled); }
  void rest() override { tls_.rest(); }

 private:
  asio::awaitable<std::size_t> read_truncation_as_eof(asio::mutable_buffer b, error_code& ec) {
    auto reading = tls_.read_some(b, ec);
    std::size_t n = co_await std::move(reading);
    if (ec == asio::ssl::error::stream_truncated) ec = asio::error::eof;
    co_return n;
  }

  e2ee::secure_stream& tls_;
  bool truncation_is_eof_;
};

class stream_duplex final : public duplex {
 public:
  explicit stream_duplex(std::shared_ptr<link::stream> s) : stream_(std::move(s)) {}
  bool readable_now() const override { return stream_->readable_now(); }
  asio::awaitable<void> wait_readable() override { return stream_->wait_readable(); }
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer b, error_code& ec) override {
    return stream_->read_some(b, ec);
  }
  asio::awaitable<void> write_all(asio::const_buffer b, error_code& ec) override {
    return stream_->write_all(std::span(static_cast<const std::uint8_t*>(b.data()), b.size()), ec);
  }
  asio::awaitable<void> shutdown_send(error_code& ec) override {
    ec = {};
    stream_->shutdown_send();
    co_return;
  }
  void abort() override { stream_->reset(proto::stream_status::cancelled); }

 private:
  std::shared_ptr<link::stream> stream_;
};

}  // namespace

std::unique_ptr<duplex> make_tcp_duplex(asio::ip::tcp::socket& socket) {
  return std::make_unique<tcp_duplex>(socket);
}
std::unique_ptr<duplex> make_tls_duplex(e2ee::secure_stream& tls, bool truncation_is_eof) {
  return std::make_unique<tls_duplex>(tls, truncation_is_eof);
}
std::unique_ptr<duplex> make_stream_duplex(std::shared_ptr<link::stream> stream) {
  return std::make_unique<stream_duplex>(std::move(stream));
}

}  // namespace burrow::http
