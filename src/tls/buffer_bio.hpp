// A BIO over two byte buffers, between OpenSSL and code that moves the ciphertext itself
// (e2ee::secure_stream over a link stream, link::link_tls over the link's socket). Unlike
// BIO_s_mem it never moves bytes that a flush is still sending, and its memory goes back when the
// buffers are released.
#pragma once

#include <openssl/bio.h>

#include <cstddef>
#include <limits>

#include "link/byte_buffer.hpp"

namespace burrow::tls {

struct bio_buffers {
  link::byte_buffer in;   // ciphertext from the peer, not yet taken by OpenSSL
  link::byte_buffer out;  // ciphertext from OpenSSL, not yet taken by a flush
  // How much of `in` OpenSSL may still take; reads count it down. A link with sealed frames
  // hands it whole records only, the bytes after them being someone else's.
  std::size_t in_limit = std::numeric_limits<std::size_t>::max();
};

// A new BIO reading `io->in` and appending to `io->out` (never blocking: an empty `in` asks to be
// retried), or null. `io` must outlive it.
BIO* new_buffer_bio(bio_buffers* io);

}  // namespace burrow::tls
