// What every kind of visitor session on the relay shares: the open metadata read off the
// visitor's socket, and the count of streams in flight that a graceful stop waits for.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "core/address.hpp"
#include "proto/control.hpp"

namespace burrow::relay {

// The visitor's and the relay's addresses (IPv4-mapped IPv6 written as IPv4), the relay's port
// being the one the visitor reached; nullopt when the socket is already gone. `peer` is the
// address accept() returned.
inline std::optional<proto::open_metadata> visitor_metadata(
    const boost::asio::ip::tcp::socket& socket, const boost::asio::ip::tcp::endpoint& peer,
    std::string service) {
  boost::system::error_code ec;
  auto local = socket.local_endpoint(ec);
  if (ec) return std::nullopt;
  proto::open_metadata meta;
  meta.service = std::move(service);
  meta.visitor_address = address_text(peer.address());
  meta.visitor_port = peer.port();
  meta.relay_address = address_text(local.address());
  meta.relay_port = local.port();
  return meta;
}

// The peer's address and port for log lines.
inline std::string peer_text(const boost::asio::ip::tcp::endpoint& peer) {
  return format_host_port(address_text(peer.address()), peer.port());
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
