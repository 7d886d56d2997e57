// The probe: OpenSSL's handshake through memory BIOs on a blocking socket with deadlines, then
// records by hand under the secrets its key log callback hands over.
#include "harness/tls13_probe.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "harness/link_records.hpp"

namespace burrow::test {

using bytes = std::vector<std::uint8_t>;

namespace {

bytes secret_from_hex(std::string_view hex) {
  bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

// The key log's two application traffic secrets, by label.
struct key_log {
  bytes client, server;
};

int key_log_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

void keep_line(const SSL* ssl, const char* line) {
  auto* log = static_cast<key_log*>(SSL_get_ex_data(ssl, key_log_index()));
  std::istringstream in(line);
  std::string label, random, secret;
  in >> label >> random >> secret;
  if (label == "CLIENT_TRAFFIC_SECRET_0") log->client = secret_from_hex(secret);
  if (label == "SERVER_TRAFFIC_SECRET_0") log->server = secret_from_hex(secret);
}

void set_timeouts(int fd, std::chrono::milliseconds limit) {
  timeval tv{};
  tv.tv_sec = limit.count() / 1000;
  tv.tv_usec = (limit.count() % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// The handshake record of a first flight, its payload cut into records of at most `size` bytes.
bytes cut_into_records(const bytes& record, std::size_t size) {
  bytes out;
  for (std::size_t at = 5; at < record.size(); at += size) {
    const std::size_t n = std::min(size, record.size() - at);
    out.insert(out.end(), {record[0], record[1], record[2], static_cast<std::uint8_t>(n >> 8),
                           static_cast<std::uint8_t>(n)});
    out.insert(out.end(), record.begin() + static_cast<std::ptrdiff_t>(at),
               record.begin() + static_cast<std::ptrdiff_t>(at + n));
  }
  return out;
}

}  // namespace

// One direction's traffic secret, and the key, IV and sequence number it gives.
struct tls13_probe::direction {
  const EVP_MD* md;
  std::size_t key_size;
  bytes secret, key, iv;
  std::uint64_t sequence = 0;

  direction(const EVP_MD* md, std::size_t key_size, bytes s)
      : md(md), key_size(key_size), secret(std::move(s)) {
    derive();
  }
  void derive() {
    key = tls13_expand_label(md, secret, "key", {}, key_size);
    iv = tls13_expand_label(md, secret, "iv", {}, 12);
    sequence = 0;
  }
  void update() {
    secret = tls13_expand_label(md, secret, "traffic upd", {}, secret.size());
    derive();
  }
};

tls13_probe::tls13_probe(std::uint16_t port, const std::string& host, const options& o) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) throw std::runtime_error("probe: no socket");
  set_timeouts(fd_, o.limit);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd_);
    throw std::runtime_error("probe: cannot connect: " + std::string(std::strerror(errno)));
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  if (!o.suite.empty()) SSL_CTX_set_ciphersuites(ctx, o.suite.c_str());
  if (!o.after_hello.empty()) SSL_CTX_clear_options(ctx, SSL_OP_ENABLE_MIDDLEBOX_COMPAT);
  SSL_CTX_set_keylog_callback(ctx, keep_line);
  SSL* ssl = SSL_new(ctx);
  key_log log;
  SSL_set_ex_data(ssl, key_log_index(), &log);
  SSL_set_tlsext_host_name(ssl, host.c_str());
  if (!o.alpn.empty()) {
    bytes wire;
    for (const auto& p : o.alpn) {
      wire.push_back(static_cast<std::uint8_t>(p.size()));
      wire.insert(wire.end(), p.begin(), p.end());
    }
    SSL_set_alpn_protos(ssl, wire.data(), static_cast<unsigned>(wire.size()));
  }
  // Memory BIOs, so the first flight can be changed and followed before it leaves.
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_connect_state(ssl);
  bool first = true, shaken = false;
  const auto deadline = std::chrono::steady_clock::now() + o.limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const int r = SSL_do_handshake(ssl);
    char* data = nullptr;
    const long n = BIO_get_mem_data(out, &data);
    bytes flight(data, data + n);
    (void)BIO_reset(out);
    if (first && !flight.empty()) {
      if (o.hello_record_size) flight = cut_into_records(flight, o.hello_record_size);
      if (o.first_record_version && flight.size() >= 3) {
        flight[1] = static_cast<std::uint8_t>(o.first_record_version >> 8);
        flight[2] = static_cast<std::uint8_t>(o.first_record_version);
      }
      flight.insert(flight.end(), o.after_hello.begin(), o.after_hello.end());
      first = false;
    }
    send_raw(flight);
    if (r == 1) {
      shaken = true;
      break;
    }
    if (SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ) break;
    std::uint8_t buf[16384];
    const ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
    if (got <= 0) break;
    BIO_write(in, buf, static_cast<int>(got));
  }
  if (shaken) {
    // What the server sent after its Finished (tickets, an answer) is the probe's to open.
    char* data = nullptr;
    const long n = BIO_get_mem_data(in, &data);
    pending_.assign(data, data + n);
    const SSL_CIPHER* c = SSL_get_current_cipher(ssl);
    switch (SSL_CIPHER_get_id(c) & 0xffff) {
      case 0x1301:
        cipher_ = EVP_aes_128_gcm(), md_ = EVP_sha256(), key_size_ = 16;
        break;
      case 0x1302:
        cipher_ = EVP_aes_256_gcm(), md_ = EVP_sha384(), key_size_ = 32;
        break;
      default:
        cipher_ = EVP_chacha20_poly1305(), md_ = EVP_sha256(), key_size_ = 32;
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  if (!shaken || log.client.empty() || log.server.empty()) {
    ::close(fd_);
    throw std::runtime_error("probe: the TLS 1.3 handshake failed");
  }
  send_ = std::make_unique<direction>(md_, key_size_, log.client);
  receive_ = std::make_unique<direction>(md_, key_size_, log.server);
}

tls13_probe::~tls13_probe() {
  if (fd_ >= 0) ::close(fd_);
}

void tls13_probe::send_raw(std::span<const std::uint8_t> b) {
  std::size_t sent = 0;
  while (sent < b.size()) {
    const ssize_t n = ::send(fd_, b.data() + sent, b.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may have closed already; its answer tells
    sent += static_cast<std::size_t>(n);
  }
}

void tls13_probe::send_record(std::span<const std::uint8_t> plain, std::uint8_t type,
                              std::size_t padding) {
  send_raw(tls13_record(cipher_, send_->key, send_->iv, send_->sequence++, plain, type, padding));
}

void tls13_probe::next_send_key() {
  send_->update();
}

probe_answer tls13_probe::read_answer(std::chrono::milliseconds limit) {
  probe_answer out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bytes in = std::exchange(pending_, {});
  auto fill = [&](std::size_t n) {
    while (in.size() < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        out.timed_out = true;
        return false;
      }
      std::uint8_t buf[4096];
      const ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
      if (got <= 0) {
        out.closed = true;
        return false;
      }
      in.insert(in.end(), buf, buf + got);
    }
    return true;
  };
  for (;;) {
    if (!fill(5)) return out;
    const std::size_t body = (std::size_t{in[3]} << 8) | in[4];
    if (!fill(5 + body)) return out;
    const bytes record(in.begin(), in.begin() + 5 + body);
    in.erase(in.begin(), in.begin() + 5 + body);
    if (record[0] == 21 && body == 2) {  // an alert in the clear
      out.alert = record[6];
      return out;
    }
    if (record[0] != 23 || body < 17) throw std::runtime_error("probe: a record it cannot read");
    // Open it the plain way: AEAD over the body with the header as associated data.
    bytes nonce = receive_->iv;
    for (std::size_t i = 0; i < 8; ++i)
      nonce[nonce.size() - 1 - i] ^= static_cast<std::uint8_t>(receive_->sequence >> (8 * i));
    ++receive_->sequence;
    const std::size_t n = body - 16;
    bytes inner(n + 16);
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    int len = 0;
    const bool ok =
        EVP_DecryptInit_ex(ctx, cipher_, nullptr, receive_->key.data(), nonce.data()) == 1 &&
        EVP_DecryptUpdate(ctx, nullptr, &len, record.data(), 5) == 1 &&
        EVP_DecryptUpdate(ctx, inner.data(), &len, record.data() + 5, static_cast<int>(n)) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16,
                            const_cast<std::uint8_t*>(record.data() + 5 + n)) == 1 &&
        EVP_DecryptFinal_ex(ctx, inner.data() + n, &len) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) throw std::runtime_error("probe: the server's record did not open");
    inner.resize(n);
    while (!inner.empty() && inner.back() == 0) inner.pop_back();
    if (inner.empty()) throw std::runtime_error("probe: a record of padding only");
    const std::uint8_t type = inner.back();
    inner.pop_back();
    if (type == 23) out.data.append(inner.begin(), inner.end());
    if (type == 21 && inner.size() == 2) {
      out.alert = inner[1];
      return out;
    }
    // Session tickets need nothing; the server's KeyUpdate moves its key from the next record.
    if (type == 22 && inner.size() >= 4 && inner[0] == 24) receive_->update();
  }
}

std::vector<std::uint8_t> bytes_of(std::string_view text) {
  return {text.begin(), text.end()};
}

}  // namespace burrow::test
