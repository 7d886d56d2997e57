// The listeners of one public TCP port (one per bind address). Each accepted visitor becomes a
// stream on a link of the agent that owns the port, on that link's thread.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace burrow::relay {

class public_port : public std::enable_shared_from_this<public_port> {
 public:
  // A visitor's socket, with its address as accept() returned it.
  using visitor_handler =
      std::function<void(boost::asio::ip::tcp::socket, const boost::asio::ip::tcp::endpoint& peer,
                         std::uint16_t port)>;

  // Binds `port` (0: the kernel chooses) on every address, with TCP keepalive after `keepalive`
  // idle (0: none; core/acceptor.hpp); throws system_error on failure. `accept_errors` (may be
  // null) counts failed accepts.
  public_port(boost::asio::any_io_executor ex, const std::vector<std::string>& addresses,
              std::uint16_t port, visitor_handler on_visitor, std::chrono::seconds keepalive,
              std::atomic<std::uint64_t>* accept_errors = nullptr);
  void start();
  void close();  // thread-safe: runs on the port's executor
  // Keepalive for the visitors accepted from now on. Thread-safe: runs on the port's executor.
  void set_keepalive(std::chrono::seconds idle);
  std::uint16_t port() const { return port_; }

 private:
  boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor);

  boost::asio::any_io_executor executor_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  std::uint16_t port_ = 0;
  visitor_handler on_visitor_;
  std::atomic<std::uint64_t>* accept_errors_ = nullptr;
};

}  // namespace burrow::relay
