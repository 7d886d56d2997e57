// The two carriers: a link stream's own operations, and a socket read with drained reads
// (core/drained_reader.hpp) and written with write_now.
#include "e2ee/carrier.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/drained_reader.hpp"
#include "link/stream.hpp"
#include "link/write_now.hpp"

namespace burrow::e2ee {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// A request or a small response in one read, the handshake's first flight in one or two.
constexpr std::size_t small_read_size = 4 * 1024;

class stream_carrier final : public carrier {
 public:
  explicit stream_carrier(std::shared_ptr<link::stream> s) : stream_(std::move(s)) {}
  // The stream's own coroutines, returned as they are: no frame of ours in between.
  asio::awaitable<void> wait_readable() override { return stream_->wait_readable(); }
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer b, error_code& ec) override {
    return stream_->read_some(b, ec);
  }
  asio::awaitable<std::size_t> write_some(asio::const_buffer b, error_code& ec) override {
    return stream_->write_some(b, ec);
  }
  void shutdown_send() override { stream_->shutdown_send(); }
  void reset(proto::stream_status why) override { stream_->reset(why); }
  bool is_reset() const override { return stream_->is_reset(); }
  std::size_t first_read_size() const override { return small_read_size; }

 private:
  std::shared_ptr<link::stream> stream_;
};

class socket_carrier final : public carrier {
 public:
  explicit socket_carrier(asio::ip::tcp::socket& s) : socket_(s), reader_(s) {
    error_code ec;
    socket_.non_blocking(true, ec);  // the reader's recv and write_now must never wait
    if (ec) reset(proto::stream_status::cancelled);
  }
  // A reset socket is closed: the wait ends at once and the read reports the reset.
  asio::awaitable<void> wait_readable() override { return reader_.wait_readable(); }
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer b, error_code& ec) override {
    if (reset_) return refuse(ec);
    return reader_.read_some(b, ec);
  }
  asio::awaitable<std::size_t> write_some(asio::const_buffer b, error_code& ec) override {
    if (reset_) {
      ec = asio::error::connection_reset;
      co_return 0;
    }
    std::size_t sent = link::write_now(socket_, b, ec);
    if (ec || sent > 0 || b.size() == 0) co_return sent;
    auto [e, n] = co_await socket_.async_write_some(b, asio::as_tuple(asio::use_awaitable));
    ec = e;
    co_return n;
  }
  void shutdown_send() override {
    error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  }
  void reset(proto::stream_status) override {
    reset_ = true;
    error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }
  bool is_reset() const override { return reset_; }
  std::size_t first_read_size() const override { return small_read_size; }

 private:
  static asio::awaitable<std::size_t> refuse(error_code& ec) {
    ec = asio::error::connection_reset;
    co_return 0;
  }

  asio::ip::tcp::socket& socket_;
  drained_reader reader_;  // after wait_readable(), its read tries once (core/drained_reader.hpp)
  bool reset_ = false;
};

}  // namespace

std::unique_ptr<carrier> make_stream_carrier(std::shared_ptr<link::stream> stream) {
  return std::make_unique<stream_carrier>(std::move(stream));
}

std::unique_ptr<carrier> make_socket_carrier(asio::ip::tcp::socket& socket) {
  return std::make_unique<socket_carrier>(socket);
}

}  // namespace burrow::e2ee
