// The hostile-client tool: peers that misbehave on purpose against the relay's listeners.
// Loopback only, every operation bounded in count and time.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proto/frame.hpp"

namespace burrow::test {

// One link frame, header and payload.
std::string frame(proto::frame_type type, std::uint8_t flags, std::uint32_t id,
                  std::string_view payload);

// A real TLS 1.3 ClientHello from OpenSSL (the first flight, record header included), with SNI
// `sni` (none when empty) and ALPN `alpn` (none when empty).
std::string client_hello(const std::string& sni, const std::string& alpn = "");

struct flood_result {
  int admitted = 0;
  int refused = 0;  // reset or closed by the relay within the settle time
};
// Opens `count` connections from `source` (127.0.0.x) to `port` and holds them while the relay
// decides; closes them all before returning.
flood_result flood(std::uint16_t port, const char* source, int count,
                   std::chrono::milliseconds settle = std::chrono::milliseconds(300));

// Sends `bytes` a byte at a time, `interval` apart, until the peer closes. Returns how long the
// peer took to close the connection, or nullopt if it was still open after `limit`.
std::optional<std::chrono::milliseconds> slowloris(std::uint16_t port, std::string bytes,
                                                   std::chrono::milliseconds interval,
                                                   std::chrono::milliseconds limit);

// True when the peer closed or reset `fd` within `limit` (what it sent first, such as a TLS
// alert or an error page, is read and dropped); false while it stays open.
bool closed_by_peer(int fd, std::chrono::milliseconds limit);

// Connects, writes `bytes`, closes.
void send_and_close(std::uint16_t port, std::string_view bytes);

// A TLS client that authenticates as an agent (or a visitor) and then misbehaves.
class rogue_agent {
 public:
  rogue_agent(std::uint16_t port, const std::string& token, const std::string& role = "agent");
  bool welcomed() const { return welcomed_; }
  void send(const std::string& bytes);
  // Reads until the relay ends the connection (or `limit` passes). Closing first would make the
  // kernel answer the relay's unread replies with an RST, which discards what we sent.
  bool wait_closed(std::chrono::seconds limit);
  // Sends a ping and waits for its pong, skipping other frames: the link is still served.
  bool ping_answered(std::chrono::seconds limit);

 private:
  boost::asio::io_context io_;
  boost::asio::ssl::context ctx_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> tls_;
  bool welcomed_ = false;
};

}  // namespace burrow::test
