// One control frame written or read on a TLS stream, for the link's opening exchange.
#include "link/handshake.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <vector>

namespace burrow::link {

namespace asio = boost::asio;

// The message is taken by value: the coroutine may start after the caller's temporaries die.
asio::awaitable<boost::system::error_code> write_control_frame(tls_stream& socket,
                                                               proto::control_message m) {
  std::string json = proto::encode_control(m);
  std::vector<std::uint8_t> buf(proto::frame_header_size + json.size());
  proto::encode_header(
      {static_cast<std::uint32_t>(json.size()), proto::frame_type::control, 0, 0},
      std::span<std::uint8_t, proto::frame_header_size>(buf.data(), proto::frame_header_size));
  std::memcpy(buf.data() + proto::frame_header_size, json.data(), json.size());
  auto [ec, n] =
      co_await asio::async_write(socket, asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

asio::awaitable<control_read> read_control_frame(tls_stream& socket) {
  control_read out;
  std::uint8_t head[proto::frame_header_size];
  auto [ec, n] =
      co_await asio::async_read(socket, asio::buffer(head), asio::as_tuple(asio::use_awaitable));
  if (ec) {
    out.error = ec == asio::error::eof ? "the peer closed the connection" : ec.message();
    co_return out;
  }
  // Decode the header alone to learn the length; the payload is checked below.
  std::uint32_t length = (std::uint32_t{head[0]} << 16) | (std::uint32_t{head[1]} << 8) | head[2];
  if (head[3] != static_cast<std::uint8_t>(proto::frame_type::control) ||
      length > proto::max_control_payload) {
    out.error = "expected a control frame";
    co_return out;
  }
  std::vector<std::uint8_t> frame(proto::frame_header_size + length);
  std::memcpy(frame.data(), head, sizeof head);
  auto [ec2, n2] = co_await asio::async_read(
      socket, asio::buffer(frame.data() + proto::frame_header_size, length),
      asio::as_tuple(asio::use_awaitable));
  if (ec2) {
    out.error = ec2.message();
    co_return out;
  }
  auto r = proto::decode_frame(frame, proto::max_control_payload);
  if (r.error != proto::decode_error::none) {
    out.error = std::string(proto::to_string(r.error));
    co_return out;
  }
  auto decoded = proto::decode_control(
      std::string_view(reinterpret_cast<const char*>(r.payload.data()), r.payload.size()));
  if (!decoded.message) {
    out.error = decoded.error;
    co_return out;
  }
  out.message = std::move(decoded.message);
  co_return out;
}

std::string negotiated_protocol(tls_stream& socket) {
  const unsigned char* p = nullptr;
  unsigned int n = 0;
  SSL_get0_alpn_selected(socket.native_handle(), &p, &n);
  return p ? std::string(reinterpret_cast<const char*>(p), n) : std::string();
}

}  // namespace burrow::link
