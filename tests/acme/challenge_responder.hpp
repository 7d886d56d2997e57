// A TLS server on 127.0.0.1 for TLS-ALPN-01 tests: it completes each handshake with a given
// context, counts the ones that answered a challenge, and closes the connection.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <thread>

namespace burrow::test {

class challenge_responder {
 public:
  struct counters {
    std::atomic<std::size_t> handshakes{0};
    std::atomic<std::size_t> answered{0};  // handshakes where answered_acme_challenge held
    std::atomic<std::size_t> failed{0};
  };

  // `tls` must outlive the responder.
  explicit challenge_responder(boost::asio::ssl::context& tls);
  ~challenge_responder();
  challenge_responder(const challenge_responder&) = delete;
  challenge_responder& operator=(const challenge_responder&) = delete;

  std::uint16_t port() const { return port_; }
  const counters& seen() const { return counters_; }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  counters counters_;
  std::thread thread_;
};

}  // namespace burrow::test
