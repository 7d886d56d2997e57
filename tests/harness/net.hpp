// Blocking POSIX-socket helpers for tests: a local TCP server with a few behaviours, and
// client calls that each take a deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace burrow::test {

enum class server_mode {
  echo,       // echo everything back; half-close after echoing once the client half-closes
  sink_hash,  // read until EOF, then write the 32-byte SHA-256 of everything received
  source,     // write source_bytes of deterministic_bytes(source_bytes, source_seed), then close
};

struct tcp_server_options {
  server_mode mode = server_mode::echo;
  std::size_t source_bytes = 0;
  std::uint64_t source_seed = 1;
  std::size_t record_prefix = 0;   // keep the first K bytes each connection received
  std::string host = "127.0.0.1";  // or "::1"
  std::uint16_t port = 0;          // 0: the kernel chooses; else a port to take again after stop()
};

// Listens on options.port (default 0) and serves each connection on its own thread (fine up to a
// few thousand). Throws std::system_error if it cannot listen.
class tcp_server {
 public:
  explicit tcp_server(tcp_server_options options = {});
  explicit tcp_server(server_mode mode) : tcp_server(tcp_server_options{.mode = mode}) {}
  ~tcp_server();
  tcp_server(const tcp_server&) = delete;
  tcp_server& operator=(const tcp_server&) = delete;

  std::uint16_t port() const { return port_; }
  // Stops accepting, aborts open connections and joins every thread. Idempotent.
  void stop();
  std::size_t accepted() const { return accepted_.load(); }
  // The first record_prefix bytes of each connection, in accept order.
  std::vector<std::string> received_prefixes() const;

 private:
  void accept_loop();
  void serve(int fd, std::size_t index);
  void record(std::size_t index, std::string_view bytes);
  void reap_finished();  // joins the workers that have ended; caller holds mutex_

  tcp_server_options options_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // pipe that ends the accept loop
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> accepted_{0};
  std::thread acceptor_;

  mutable std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::vector<std::thread::id> finished_;  // workers about to return, joined on the next accept
  std::set<int> open_fds_;                 // shut down by stop() to unblock workers
  std::vector<std::string> prefixes_;
};

// Connects to host:port (IPv4 or IPv6 literal). Returns a blocking fd, or -1 with errno set
// (ECONNREFUSED, ETIMEDOUT at the deadline, ...).
int connect_tcp(std::uint16_t port, std::chrono::milliseconds deadline,
                const char* host = "127.0.0.1", const char* source = nullptr);

// Poll-based I/O that works on blocking sockets too; none of these raise SIGPIPE.
bool write_all(int fd, std::span<const std::uint8_t> data, std::chrono::milliseconds deadline);
inline bool write_all(int fd, std::string_view data, std::chrono::milliseconds deadline) {
  return write_all(fd, std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()),
                   deadline);
}
// Everything up to EOF; nullopt on error, at the deadline, or past max_bytes.
std::optional<std::string> read_until_eof(int fd, std::chrono::milliseconds deadline,
                                          std::size_t max_bytes);
// Exactly n bytes; nullopt on error, early EOF or at the deadline.
std::optional<std::string> read_exact(int fd, std::size_t n, std::chrono::milliseconds deadline);

// An int socket option (getsockopt), or -1 if the call fails.
int socket_int_option(int fd, int level, int name);

// Reproducible pseudo-random bytes (splitmix64) for payloads that must be checked end to end.
// A port on 127.0.0.1 that was free a moment ago (for tests that must choose a port themselves).
std::uint16_t free_port();

std::string deterministic_bytes(std::size_t n, std::uint64_t seed);
// Lowercase hex SHA-256.
std::string sha256_hex(std::string_view data);

}  // namespace burrow::test
