// A TLS 1.3 client that breaks the rules on purpose, as a conformance suite does: OpenSSL runs
// its handshake over a real socket, then the probe holds the session's traffic secrets (from
// OpenSSL's key log) and writes records of its own making, fragmented, padded, oversized or
// malformed, and reads the server's answer: its data, and the alert it ends with, if any. The
// same probe runs against a share URL and against `openssl s_server`, so every expectation is
// checked on OpenSSL as a control.
#pragma once

#include <openssl/evp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace burrow::test {

// TLS alert descriptions (RFC 8446, section 6.2) the tests expect.
enum class tls_alert : std::uint8_t {
  close_notify = 0,
  unexpected_message = 10,
  bad_record_mac = 20,
  record_overflow = 22,
  handshake_failure = 40,
  illegal_parameter = 47,
  decode_error = 50,
  protocol_version = 70,
};

struct probe_answer {
  std::string data;                   // application data the server sent
  std::optional<std::uint8_t> alert;  // the description of the alert it ended with
  bool closed = false;                // the connection ended (FIN or reset)
  bool timed_out = false;             // nothing ended it before the deadline
};

class tls13_probe {
 public:
  struct options {
    std::string suite;  // offer only this TLS 1.3 suite; empty: OpenSSL's list
    // Sent in the same write as the ClientHello, right behind it (a middlebox-compatibility
    // ChangeCipherSpec, say); the client then sends no ChangeCipherSpec of its own.
    std::vector<std::uint8_t> after_hello;
    std::uint16_t first_record_version = 0;  // written into the ClientHello's record when set
    std::size_t hello_record_size = 0;  // when set, the ClientHello is cut into records this big
    std::vector<std::string> alpn;      // protocols offered, in order
    std::chrono::milliseconds limit = std::chrono::seconds(10);
  };
  // Connects to 127.0.0.1:`port` and runs a TLS 1.3 handshake, SNI `host`; nothing is verified.
  // Throws std::runtime_error when the handshake fails or takes longer than the limit.
  tls13_probe(std::uint16_t port, const std::string& host) : tls13_probe(port, host, options{}) {}
  tls13_probe(std::uint16_t port, const std::string& host, const options& o);
  ~tls13_probe();
  tls13_probe(const tls13_probe&) = delete;
  tls13_probe& operator=(const tls13_probe&) = delete;

  // One record under the client's current key: `plain`, then its inner type and `padding`
  // zeros, however long that makes it.
  void send_record(std::span<const std::uint8_t> plain, std::uint8_t type = 23,
                   std::size_t padding = 0);
  // Bytes straight onto the socket, outside any protection (a plaintext record, say).
  void send_raw(std::span<const std::uint8_t> bytes);
  // What sending a KeyUpdate does to the client's own keys: the next record is under the next.
  void next_send_key();
  // Reads the server's records until it sends an alert or closes, or `limit` passes. The
  // server's own KeyUpdates are followed.
  probe_answer read_answer(std::chrono::milliseconds limit = std::chrono::seconds(5));

 private:
  struct direction;
  int fd_ = -1;
  std::vector<std::uint8_t> pending_;  // the server's bytes read during the handshake, unopened
  std::unique_ptr<direction> send_, receive_;
  const EVP_CIPHER* cipher_ = nullptr;
  const EVP_MD* md_ = nullptr;
  std::size_t key_size_ = 0;
};

// The bytes of `text`, for record bodies.
std::vector<std::uint8_t> bytes_of(std::string_view text);

}  // namespace burrow::test
