// A local HTTP/1.1 service (Boost.Beast) for end-to-end tests of HTTPS share URLs, and blocking
// WebSocket echo clients, plain and over TLS, that each take a deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace burrow::test {

struct http_service_options {
  std::string host = "127.0.0.1";  // or "::1"
  std::uint16_t port = 0;          // 0: the kernel chooses; else a port to take again
  std::size_t threads = 1;         // io_context threads; each connection runs on its own strand
};

// Listens on host:port (port 0 by default) and serves, on its own io_context thread(s), keep-alive
// and pipelined requests in order, streaming every body:
//   GET /headers            200 JSON {"method", "target", "headers": {lowercased: "v1, v2"}}
//   POST|PUT /sha256        200 "<hex sha256> <length>" of the body (Content-Length or chunked)
//   POST /echo              the body back, chunked, as it arrives
//   GET|HEAD /bytes/N       N bytes of pattern_bytes in 64 KiB writes; ?chunked=1 for chunked
//   GET /sse?count=N&interval_ms=M   text/event-stream, "data: event I\n\n" M ms apart, close
//   GET /ws                 WebSocket echo of text and binary messages until close
//   GET /slow?ms=M          200 "slow" after M ms (at most 60 s)
//   GET /close              200 with Connection: close, then closes
//   anything else           404
// Throws std::system_error if it cannot listen.
class http_service {
 public:
  explicit http_service(http_service_options options = {});
  ~http_service();
  http_service(const http_service&) = delete;
  http_service& operator=(const http_service&) = delete;

  std::uint16_t port() const { return port_; }
  // Stops accepting, closes open connections (escalating to stopping the io_context if they do
  // not end within a few seconds) and joins every thread. Idempotent.
  void stop();

  std::size_t requests_seen() const;
  std::size_t connections_seen() const;
  // Headers of the last request whose head was read, on any route: lowercased names, repeated
  // headers joined with ", ".
  std::map<std::string, std::string> last_headers() const;

  struct impl;  // Beast and Asio stay out of this header

 private:
  std::unique_ptr<impl> impl_;
  std::uint16_t port_ = 0;
};

// Bytes [offset, offset + n) of the endless pattern /bytes serves: little-endian splitmix64 of
// each 8-byte word's index, so any shift or repeated range changes the hash.
std::string pattern_bytes(std::uint64_t offset, std::size_t n);
// Lowercase hex SHA-256 of the first n pattern bytes.
std::string pattern_sha256_hex(std::uint64_t n);

// Connects to 127.0.0.1:port, does TLS with SNI sni_host verifying the chain against
// ca_pem_file and the certificate against sni_host (a DNS name or an IP literal), upgrades
// GET /ws with Host sni_host, sends each message (binary frames if `binary`, else text) and
// reads its echo, then closes the WebSocket and TLS. Returns the echoes in order; throws
// std::runtime_error naming the step that failed, or the deadline, for the whole exchange.
std::vector<std::string> ws_echo_over_tls(std::uint16_t port, std::string sni_host,
                                          std::string ca_pem_file,
                                          std::vector<std::string> messages,
                                          std::chrono::milliseconds deadline, bool binary = false);

// The same without TLS: connects to 127.0.0.1:port and upgrades with Host host_header.
std::vector<std::string> ws_echo_plain(std::uint16_t port, std::string host_header,
                                       std::vector<std::string> messages,
                                       std::chrono::milliseconds deadline, bool binary = false);

}  // namespace burrow::test
