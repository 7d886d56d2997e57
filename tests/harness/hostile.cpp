// The hostile-client tool.
#include "harness/hostile.hpp"

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <thread>
#include <vector>

#include "harness/net.hpp"
#include "proto/control.hpp"

namespace burrow::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

std::string frame(proto::frame_type type, std::uint8_t flags, std::uint32_t id,
                  std::string_view payload) {
  std::string out(proto::frame_header_size, '\0');
  proto::encode_header({static_cast<std::uint32_t>(payload.size()), type, flags, id},
                       std::span<std::uint8_t, proto::frame_header_size>(
                           reinterpret_cast<std::uint8_t*>(out.data()), proto::frame_header_size));
  return out + std::string(payload);
}

std::string client_hello(const std::string& sni, const std::string& alpn) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (!sni.empty()) SSL_set_tlsext_host_name(ssl, sni.c_str());
  if (!alpn.empty()) {
    std::string wire = std::string(1, static_cast<char>(alpn.size())) + alpn;
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()),
                        static_cast<unsigned>(wire.size()));
  }
  SSL_connect(ssl);  // wants to read: the ClientHello is in `out`
  std::string hello;
  char buf[4096];
  int n;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) hello.append(buf, static_cast<std::size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

bool closed_by_peer(int fd, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};  // looks at least once, even when no time is left
    if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0))) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

flood_result flood(std::uint16_t port, const char* source, int count,
                   std::chrono::milliseconds settle) {
  flood_result r;
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    int fd = connect_tcp(port, 5s, "127.0.0.1", source);
    if (fd < 0) {
      ++r.refused;  // the backlog overflowed: refused just the same
      continue;
    }
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(settle);  // the relay accepts and decides on every one
  for (int fd : fds) {
    if (closed_by_peer(fd, 1ms))
      ++r.refused;
    else
      ++r.admitted;
    ::close(fd);
  }
  return r;
}

std::optional<std::chrono::milliseconds> slowloris(std::uint16_t port, std::string bytes,
                                                   std::chrono::milliseconds interval,
                                                   std::chrono::milliseconds limit) {
  int fd = connect_tcp(port, 5s);
  if (fd < 0) return std::nullopt;
  auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::milliseconds> closed;
  for (std::size_t i = 0; std::chrono::steady_clock::now() - start < limit; ++i) {
    if (closed_by_peer(fd, interval) ||
        ::send(fd, bytes.data() + i % bytes.size(), 1, MSG_NOSIGNAL) != 1) {
      closed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      break;
    }
  }
  ::close(fd);
  return closed;
}

void send_and_close(std::uint16_t port, std::string_view bytes) {
  int fd = connect_tcp(port, 5s);
  if (fd < 0) return;
  write_all(fd, bytes, 5s);
  ::close(fd);
}

rogue_agent::rogue_agent(std::uint16_t port, const std::string& token, const std::string& role)
    : ctx_(asio::ssl::context::tls_client), tls_(io_, ctx_) {
  ctx_.set_verify_mode(asio::ssl::verify_none);
  SSL_CTX_set_min_proto_version(ctx_.native_handle(), TLS1_3_VERSION);
  static const unsigned char alpn[] =
      "\x08"
      "burrow/1";
  SSL_set_alpn_protos(tls_.native_handle(), alpn, sizeof alpn - 1);
  timeval tv{10, 0};  // no read below waits forever
  tls_.lowest_layer().connect({asio::ip::make_address("127.0.0.1"), port});
  ::setsockopt(tls_.lowest_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  boost::system::error_code ec;
  tls_.handshake(asio::ssl::stream_base::client, ec);
  if (ec) return;
  proto::hello h{{proto::protocol_version}, role, token, "rogue-session", 0, "rogue", ""};
  send(frame(proto::frame_type::control, 0, 0, proto::encode_control(h)));
  std::uint8_t head[proto::frame_header_size];
  asio::read(tls_, asio::buffer(head), ec);
  if (ec) return;
  std::string body((head[0] << 16) | (head[1] << 8) | head[2], '\0');
  asio::read(tls_, asio::buffer(body), ec);
  welcomed_ = !ec && body.find("welcome") != std::string::npos;
}

void rogue_agent::send(const std::string& bytes) {
  boost::system::error_code ec;
  asio::write(tls_, asio::buffer(bytes), ec);
}

bool rogue_agent::wait_closed(std::chrono::seconds limit) {
  timeval tv{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(tls_.lowest_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  boost::system::error_code ec;
  auto until = std::chrono::steady_clock::now() + limit;
  while (!ec && std::chrono::steady_clock::now() < until) tls_.read_some(asio::buffer(buf), ec);
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
         ec == asio::error::connection_reset;
}

bool rogue_agent::ping_answered(std::chrono::seconds limit) {
  send(frame(proto::frame_type::ping, 0, 0, "pingpong"));
  auto until = std::chrono::steady_clock::now() + limit;
  boost::system::error_code ec;
  while (std::chrono::steady_clock::now() < until) {
    std::uint8_t head[proto::frame_header_size];
    asio::read(tls_, asio::buffer(head), ec);
    if (ec) return false;
    std::string body((head[0] << 16) | (head[1] << 8) | head[2], '\0');
    asio::read(tls_, asio::buffer(body), ec);
    if (ec) return false;
    if (head[3] == static_cast<std::uint8_t>(proto::frame_type::ping) &&
        (head[4] & proto::flag::ack) && body == "pingpong")
      return true;
  }
  return false;
}

}  // namespace burrow::test
