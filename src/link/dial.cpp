// Dialling the relay, one bounded step at a time, with errors that say what to change.
#include "link/dial.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include "core/deadline.hpp"
#include "core/drained.hpp"
#include "link/flow_window.hpp"
#include "link/handshake.hpp"
#include "tls/contexts.hpp"

namespace burrow::link {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

asio::awaitable<boost::system::error_code> tcp_connect(tcp::socket& s,
                                                       tcp::resolver::results_type endpoints) {
  auto [ec, ep] = co_await asio::async_connect(s, endpoints, asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

asio::awaitable<std::pair<boost::system::error_code, tcp::resolver::results_type>> resolve(
    tcp::resolver& r, std::string host, std::string port) {
  auto [ec, results] = co_await r.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
  co_return std::make_pair(ec, results);
}

asio::awaitable<boost::system::error_code> tls_connect(tls_stream& tls) {
  auto [ec] = co_await tls.async_handshake(asio::ssl::stream_base::client,
                                           asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

}  // namespace

asio::awaitable<dial_result> dial_relay(dial_options o, asio::ssl::context& ctx,
                                        proto::hello hello) {
  dial_result out;
  out.failure = dial_failure::retry;
  auto ex = co_await asio::this_coro::executor;
  tcp::resolver resolver(ex);
  auto resolving = resolve(resolver, o.host, o.port);
  auto resolved = co_await with_deadline(std::move(resolving), o.timeout);
  if (!resolved || resolved->first) {
    out.error = resolved ? "cannot resolve " + o.host + ": " + resolved->first.message()
                         : "resolving " + o.host + " timed out";
    co_return out;
  }
  tcp::socket socket(ex);
  auto connecting = tcp_connect(socket, resolved->second);
  auto connected = co_await with_deadline(std::move(connecting), o.timeout);
  if (!connected || *connected) {
    out.error = connected ? connected->message() : "connecting timed out";
    co_return out;
  }
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  report_queued_bytes(socket);  // the link's reader learns from each read that it emptied it
  tls_stream tls(std::move(socket), ctx);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(tls.native_handle(), {o.relay_pin, o.relay_ca, o.host}, &outcome);
  auto shaking = tls_connect(tls);
  auto shaken = co_await with_deadline(std::move(shaking), o.timeout);
  if (!shaken || *shaken) {
    if (outcome.pin_mismatch) {
      out.failure = dial_failure::relay_identity;
      // Never offer the presented fingerprint as the fix: that is what an interceptor wants.
      out.error =
          "the relay at " + o.relay + " presented certificate " + outcome.seen_fingerprint +
          " but --relay-pin expects " + o.relay_pin +
          ". Check on the relay's own machine: `burrow relay` prints \"relay fingerprint:\" "
          "at start. If that line shows the presented certificate, the relay's state "
          "changed and --relay-pin must take the new fingerprint; if it shows the pinned "
          "one, something between you and the relay is intercepting the connection";
    } else if (!outcome.chain_error.empty()) {
      out.failure = dial_failure::relay_identity;
      out.error = "cannot verify the relay's certificate: " + outcome.chain_error +
                  ". Pass --relay-pin with the fingerprint `burrow relay` prints, or --relay-ca";
    } else {
      out.error = shaken ? "TLS handshake failed: " + shaken->message() : "TLS handshake timed out";
    }
    co_return out;
  }

  if (negotiated_protocol(tls) != "burrow/1") {
    out.error = "the relay did not agree on ALPN burrow/1; is this a Burrow relay's agent port?";
    out.failure = dial_failure::refused;
    co_return out;
  }
  const bool want_plain = o.encryption == link_encryption::none;
  if (want_plain) hello.link_encryption = "none";
  hello.sealed_frames = o.encryption == link_encryption::tls;
  hello.own_records = !want_plain;
  const bool hello_sealed = hello.sealed_frames;
  const bool hello_own = hello.own_records;
  auto send_hello = write_control_frame(tls, std::move(hello));
  auto sent = co_await with_deadline(std::move(send_hello), o.timeout);
  if (!sent || *sent) {
    out.error = "could not send hello";
    co_return out;
  }
  auto reading = read_control_frame(tls);
  auto reply = co_await with_deadline(std::move(reading), o.timeout);
  if (!reply || !reply->message) {
    out.error = reply ? "bad answer to hello: " + reply->error : "no answer to hello";
    co_return out;
  }
  if (auto* err = std::get_if<proto::link_error>(&*reply->message)) {
    out.error = "relay refused the link: " + err->message + " (" + err->code + ")";
    if (err->code == "link_encryption") {
      out.failure = dial_failure::refused;
      out.error = "the relay refused an unencrypted link (" + err->message +
                  "). Drop --link-encryption none, or start the relay with --link-encryption none "
                  "to allow it";
    } else if (err->code == "bad_token") {
      out.failure = dial_failure::bad_token;
      out.error =
          "the relay refused the token (bad_token). Check --token or BURROW_TOKEN: "
          "`burrow relay` prints the token on its first start and keeps it in its state "
          "directory as agent.token";
    } else if (err->code != "going_away") {
      out.failure = dial_failure::refused;
    }
    co_return out;
  }
  auto* w = std::get_if<proto::welcome>(&*reply->message);
  if (!w || w->version != proto::protocol_version || w->max_frame < 1024 ||
      w->max_frame > proto::max_frame_payload_encodable || w->initial_window < 1024 ||
      w->initial_window > max_window || w->max_streams == 0) {
    out.error = "the relay's welcome is not one this version understands";
    out.failure = dial_failure::refused;
    co_return out;
  }
  link_limits limits;
  limits.max_frame = w->max_frame;
  limits.initial_window = w->initial_window;
  limits.max_streams = w->max_streams;
  if (w->ping_interval_ms >= 100)
    limits.ping_interval = std::chrono::milliseconds(w->ping_interval_ms);
  limits.ping_timeout = w->ping_timeout_ms >= 100 ? std::chrono::milliseconds(w->ping_timeout_ms)
                                                  : limits.ping_interval;
  // A relay that does not know a field answers without it: the link stays encrypted, all of it.
  auto encryption = want_plain && w->link_encryption == "none" ? link_encryption::none
                    : hello_sealed && w->sealed_frames         ? link_encryption::tls
                                                               : link_encryption::full;
  if (want_plain && encryption != link_encryption::none)
    spdlog::warn("link {}: the relay did not agree to an unencrypted link; it stays on TLS",
                 o.link_name);
  out.failure = dial_failure::none;
  out.link = std::make_shared<link>(std::move(tls), link_role::dialer, limits, o.link_name,
                                    encryption, hello_own && w->own_records);
  co_return out;
}

}  // namespace burrow::link
