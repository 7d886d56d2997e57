// The link pair: a self-signed "relay" certificate pinned by the dialing side, like the real
// agent and relay, and a far end that accepts every stream.
#include "e2ee/link_pair.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::test {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

const tls::key_pair& relay_identity() {
  static const tls::key_pair id =
      tls::make_self_signed("test relay", {"localhost"}, std::chrono::hours(24));
  return id;
}

void ignore_end(std::exception_ptr, std::string) {}

}  // namespace

link_pair::link_pair(asio::io_context& ioc, link::link_limits limits,
                     link::link_encryption encryption, bool own_records)
    : ioc_(ioc),
      limits_(limits),
      encryption_(encryption),
      own_records_(own_records),
      acceptor_(ioc, {asio::ip::make_address("127.0.0.1"), 0}),
      accepted_event_(ioc.get_executor()) {}

link_pair::~link_pair() {
  if (near_fd_ >= 0) ::close(near_fd_);
}

void link_pair::use_small_socket_buffers(int bytes) {
  acceptor_.set_option(
      asio::socket_base::receive_buffer_size(bytes));  // accepted sockets inherit it
  near_send_buffer_ = bytes;
}

bool link_pair::inject(std::string_view bytes) {
  return near_fd_ >= 0 && ::send(near_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                              static_cast<ssize_t>(bytes.size());
}

asio::awaitable<void> link_pair::connect() {
  using namespace asio::experimental::awaitable_operators;
  auto far = accept_far();
  auto near = dial_near();
  co_await (std::move(far) && std::move(near));
}

asio::awaitable<void> link_pair::accept_far() {
  auto accept = acceptor_.async_accept(asio::use_awaitable);
  auto socket = co_await std::move(accept);
  socket.set_option(tcp::no_delay(true));  // as the relay's and the agent's links have it
  auto ctx = tls::make_server_context(relay_identity(), {});
  link::tls_stream tls(std::move(socket), ctx);
  auto handshake = tls.async_handshake(asio::ssl::stream_base::server, asio::use_awaitable);
  co_await std::move(handshake);
  // The welcome's place in the opening exchange: one record through OpenSSL, which the near end
  // reads after the session tickets that precede it, as a dialer reads the relay's welcome.
  auto welcome = asio::async_write(tls, asio::buffer("w", 1), asio::use_awaitable);
  co_await std::move(welcome);
  far_ = std::make_shared<link::link>(std::move(tls), link::link_role::acceptor, limits_, "far",
                                      encryption_, own_records_);
  link::link::handlers h;
  h.on_open = [this](std::shared_ptr<link::stream> s, proto::open_metadata) {
    far_->accept(*s);
    accepted_.push_back(std::move(s));
    accepted_event_.notify();
  };
  asio::co_spawn(ioc_, far_->run(std::move(h)), [this](std::exception_ptr, std::string why) {
    far_ended_ = why.empty() ? "ended" : why;
  });
}

asio::awaitable<void> link_pair::dial_near() {
  tcp::socket socket(ioc_);
  if (near_send_buffer_) {
    socket.open(tcp::v4());
    socket.set_option(asio::socket_base::send_buffer_size(near_send_buffer_));
  }
  auto connect = socket.async_connect(acceptor_.local_endpoint(), asio::use_awaitable);
  co_await std::move(connect);
  socket.set_option(tcp::no_delay(true));
  auto ctx = tls::make_client_context({});
  link::tls_stream tls(std::move(socket), ctx);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(
      tls.native_handle(), {tls::fingerprint_sha256(relay_identity().cert_pem), "", "localhost"},
      &outcome);
  auto handshake = tls.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  co_await std::move(handshake);
  char welcome = 0;
  auto reading = asio::async_read(tls, asio::buffer(&welcome, 1), asio::use_awaitable);
  co_await std::move(reading);
  near_fd_ = ::dup(tls.next_layer().native_handle());
  near_ = std::make_shared<link::link>(std::move(tls), link::link_role::dialer, limits_, "near",
                                       encryption_, own_records_);
  asio::co_spawn(ioc_, near_->run({}), ignore_end);
}

asio::awaitable<stream_ends> link_pair::open(bool sealed) {
  stream_ends ends;
  proto::open_metadata meta{"svc", "127.0.0.1", 1, "127.0.0.1", 2};
  meta.sealed = sealed;
  ends.near = near_->open_stream(meta);
  while (accepted_.empty()) {
    auto wait = accepted_event_.wait();
    co_await std::move(wait);
  }
  ends.far = std::move(accepted_.front());
  accepted_.pop_front();
  co_return ends;
}

void link_pair::close() {
  if (near_) near_->close("test done");
  if (far_) far_->close("test done");
}

}  // namespace burrow::test
