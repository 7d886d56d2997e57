// A stream seen as an Asio stream (async_read_some / async_write_some with any completion
// token), so that boost::asio::ssl::stream can run TLS inside it: the end-to-end session between
// a visitor's helper and the agent, which the relay only forwards.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "link/stream.hpp"

namespace burrow::link {

namespace detail {
using io_result = std::pair<boost::system::error_code, std::size_t>;
// Free functions, not lambdas: GCC 12 mishandles lambda coroutines' captures.
boost::asio::awaitable<io_result> channel_read(std::shared_ptr<stream> s,
                                               boost::asio::mutable_buffer b);
boost::asio::awaitable<io_result> channel_write(std::shared_ptr<stream> s,
                                                boost::asio::const_buffer b);
}  // namespace detail

class stream_channel {
 public:
  using executor_type = boost::asio::any_io_executor;
  using lowest_layer_type = stream_channel;

  stream_channel(std::shared_ptr<stream> s, executor_type ex)
      : stream_(std::move(s)), executor_(std::move(ex)) {}

  executor_type get_executor() const { return executor_; }
  lowest_layer_type& lowest_layer() { return *this; }
  const std::shared_ptr<stream>& underlying() const { return stream_; }

  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return start(detail::channel_read,
                 first(boost::asio::buffer_sequence_begin(buffers),
                       boost::asio::buffer_sequence_end(buffers)),
                 std::forward<Token>(token));
  }

  template <class ConstBuffers, class Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return start(detail::channel_write,
                 boost::asio::const_buffer(first(boost::asio::buffer_sequence_begin(buffers),
                                                 boost::asio::buffer_sequence_end(buffers))),
                 std::forward<Token>(token));
  }

 private:
  // The first non-empty buffer: TLS engines hand over one buffer at a time anyway.
  template <class It>
  static std::remove_cvref_t<decltype(*std::declval<It>())> first(It begin, It end) {
    for (auto it = begin; it != end; ++it)
      if (it->size() > 0) return *it;
    return {};
  }

  template <class Op, class Buffer, class Token>
  auto start(Op op, Buffer buffer, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this, op](auto handler, Buffer b) {
          boost::asio::co_spawn(
              executor_, op(stream_, b),
              [h = std::move(handler)](std::exception_ptr e, detail::io_result r) mutable {
                if (e) r.first = boost::asio::error::operation_aborted;
                std::move(h)(r.first, r.second);
              });
        },
        token, buffer);
  }

  std::shared_ptr<stream> stream_;
  executor_type executor_;
};

}  // namespace burrow::link
