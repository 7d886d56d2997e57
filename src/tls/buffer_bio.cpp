// The buffer BIO's callbacks: writes append to `out`, reads take from `in` and ask to be retried
// when it is empty.
#include "tls/buffer_bio.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

#include "tls/certs.hpp"

namespace burrow::tls {
namespace {

bio_buffers* buffers_of(BIO* bio) {
  return static_cast<bio_buffers*>(BIO_get_data(bio));
}

int bio_write(BIO* bio, const char* data, int len) {
  BIO_clear_retry_flags(bio);
  auto* io = buffers_of(bio);
  if (!io || len < 0) return -1;
  try {
    io->out.append(data, static_cast<std::size_t>(len));
  } catch (const std::exception&) {
    return -1;  // nothing may escape into OpenSSL's C frames
  }
  return len;
}

int bio_read(BIO* bio, char* data, int len) {
  BIO_clear_retry_flags(bio);
  auto* io = buffers_of(bio);
  if (!io || len < 0) return -1;
  std::size_t n = std::min({static_cast<std::size_t>(len), io->in.size(), io->in_limit});
  if (n == 0) {
    BIO_set_retry_read(bio);
    return -1;
  }
  std::memcpy(data, io->in.data(), n);
  io->in.consume(n);
  if (io->in_limit != std::numeric_limits<std::size_t>::max()) io->in_limit -= n;
  return static_cast<int>(n);
}

long bio_ctrl(BIO* bio, int cmd, long, void*) {
  auto* io = buffers_of(bio);
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;  // flushing is the owner's business, after each OpenSSL call
    case BIO_CTRL_PENDING:
      return io ? static_cast<long>(std::min(io->in.size(), io->in_limit)) : 0;
    case BIO_CTRL_WPENDING:
      return io ? static_cast<long>(io->out.size()) : 0;
    default:
      return 0;
  }
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* make_buffer_method() {
  int type = BIO_get_new_index();
  BIO_METHOD* m =
      type == -1 ? nullptr : BIO_meth_new(type | BIO_TYPE_SOURCE_SINK, "burrow-buffers");
  if (!m || BIO_meth_set_write(m, bio_write) != 1 || BIO_meth_set_read(m, bio_read) != 1 ||
      BIO_meth_set_ctrl(m, bio_ctrl) != 1 || BIO_meth_set_create(m, bio_create) != 1)
    tls::throw_openssl_error("cannot make the buffer BIO method");
  return m;
}

}  // namespace

BIO* new_buffer_bio(bio_buffers* io) {
  static BIO_METHOD* const method = make_buffer_method();  // lives as long as the process
  BIO* bio = BIO_new(method);
  if (bio) BIO_set_data(bio, io);
  return bio;
}

}  // namespace burrow::tls
