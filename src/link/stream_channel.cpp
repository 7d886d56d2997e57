// The coroutines behind stream_channel's reads and writes.
#include "link/stream_channel.hpp"

namespace burrow::link::detail {

boost::asio::awaitable<io_result> channel_read(std::shared_ptr<stream> s,
                                               boost::asio::mutable_buffer b) {
  boost::system::error_code ec;
  std::size_t n = b.size() ? co_await s->read_some(b, ec) : 0;
  co_return io_result{ec, n};
}

boost::asio::awaitable<io_result> channel_write(std::shared_ptr<stream> s,
                                                boost::asio::const_buffer b) {
  boost::system::error_code ec;
  std::size_t n = b.size() ? co_await s->write_some(b, ec) : 0;
  co_return io_result{ec, n};
}

}  // namespace burrow::link::detail
