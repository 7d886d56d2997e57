// The link's TLS session once its opening exchange is done, driven through memory buffers rather
// than asio::ssl::stream. Asio's stream moves one record (at most 16 KiB) per system call; here a
// whole batch of frames becomes several records sent with one write, and one read takes in every
// record the socket holds. When hello and welcome agreed on the link's own
// records, those records are record_protection's, keyed from this session, and OpenSSL's record
// layer is no longer used.
#pragma once

#include <openssl/ssl.h>

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "link/byte_buffer.hpp"
#include "link/record_protection.hpp"
#include "tls/buffer_bio.hpp"

namespace burrow::link {

class link_tls {
 public:
  // Takes over the session of `ssl`, which stays owned (and is freed) by the asio stream that
  // made it: ciphertext already read into its BIO moves to ours, and ours replaces it. The
  // opening exchange guarantees nothing of the peer's is still in asio's own buffers: each side
  // stays silent until the other's control frame has been read (link.hpp). Throws
  // std::runtime_error when the session still has ciphertext to send. `own_records`: records after
  // the welcome are record_protection's, with the keys of this side (`dialer` or not).
  explicit link_tls(SSL* ssl, bool own_records = false, bool dialer = false);
  ~link_tls();
  link_tls(const link_tls&) = delete;
  link_tls& operator=(const link_tls&) = delete;

  // Encrypts all of `plain` into records, which take_records() hands out.
  boost::system::error_code encrypt(std::span<const std::uint8_t> plain);
  // Swaps the records written so far (by encrypt, or an alert from decrypt) into `empty`, which
  // the caller then sends: OpenSSL may append more while a send is in flight, and must not move
  // the bytes being sent.
  void take_records(byte_buffer& empty) { std::swap(io_.out, empty); }

  // Where to read up to n bytes of ciphertext from the socket; received() adds them.
  std::uint8_t* prepare_read(std::size_t n) { return io_.in.prepare(n); }
  void received(std::size_t n) { io_.in.commit(n); }
  // Decrypts every whole record received so far, appending the plaintext to `plain`.
  // asio::error::eof after the peer's close_notify.
  boost::system::error_code decrypt(byte_buffer& plain);
  // Decrypts the first `records` bytes received, which must be whole records; what follows them
  // is not OpenSSL's (a link with sealed frames: input() and consume_input() take it).
  boost::system::error_code decrypt(byte_buffer& plain, std::size_t records);
  std::span<const std::uint8_t> input() const { return io_.in.bytes(); }
  void consume_input(std::size_t n) { io_.in.consume(n); }
  // Bytes of records written (by encrypt, or an alert from decrypt) and not yet taken.
  std::size_t records_pending() const { return io_.out.size(); }
  // Gives back the read buffer's memory over `keep` bytes if it holds nothing; not while a read
  // into prepare_read()'s space is in flight.
  void trim_read(std::size_t keep) { io_.in.trim(keep); }
  std::size_t read_capacity() const { return io_.in.capacity(); }

 private:
  // Opens own records among the first `limit` bytes received; `whole`: they must all be taken.
  boost::system::error_code open_own(byte_buffer& plain, std::size_t limit, bool whole);

  SSL* ssl_;
  tls::bio_buffers io_;
  std::unique_ptr<record_protection> own_;  // null: OpenSSL's record layer
};

}  // namespace burrow::link
