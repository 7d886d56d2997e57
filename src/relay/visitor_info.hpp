// What every kind of visitor session on the relay shares: the open metadata read off the
// visitor's socket, and the count of streams in flight that a graceful stop waits for.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "proto/control.hpp"

namespace burrow::relay {

// The visitor's and the relay's addresses (IPv4-mapped IPv6 written as IPv4); nullopt when the
// socket is already gone.
inline std::optional<proto::open_metadata> visitor_metadata(
    const boost::asio::ip::tcp::socket& socket, std::string service, std::uint16_t relay_port) {
  boost::system::error_code ec;
  auto remote = socket.remote_endpoint(ec);
  if (ec) return std::nullopt;
  auto local = socket.local_endpoint(ec);
  if (ec) return std::nullopt;
  auto visitor = remote.address();
  if (visitor.is_v6() && visitor.to_v6().is_v4_mapped())
    visitor = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, visitor.to_v6());
  proto::open_metadata meta;
  meta.service = std::move(service);
  meta.visitor_address = visitor.to_string();
  meta.visitor_port = remote.port();
  meta.relay_address = local.address().to_string();
  meta.relay_port = relay_port;
  return meta;
}

// The peer's address and port for log lines ("unknown" once the socket is gone).
inline std::string peer_text(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  auto remote = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  auto a = remote.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  return a.is_v6() ? "[" + a.to_string() + "]:" + std::to_string(remote.port())
                   : a.to_string() + ":" + std::to_string(remote.port());
}

// Counts a session in flight for as long as it lives.
class counted {
 public:
  explicit counted(std::atomic<std::size_t>& n) : n_(n) { ++n_; }
  ~counted() { --n_; }
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;

 private:
  std::atomic<std::size_t>& n_;
};

}  // namespace burrow::relay
