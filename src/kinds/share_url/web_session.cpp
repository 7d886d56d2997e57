// Blind and inspect share URLs: a visitor's HTTP, checked against the access rules and proxied
// to the local service (http/proxy.hpp); also where the ACME CA's validations are answered.
#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <optional>

#include "acme/tls_alpn.hpp"
#include "core/address.hpp"
#include "core/deadline.hpp"
#include "e2ee/secure_stream.hpp"
#include "http/access_rules.hpp"
#include "http/duplex.hpp"
#include "http/proxy.hpp"
#include "kinds/share_url/share_url.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"

namespace burrow::kinds::share_url {

namespace asio = boost::asio;
using asio::ip::tcp;

asio::awaitable<void> share_url_side::web_session(std::shared_ptr<link::link> l,
                                                  std::shared_ptr<link::stream> s,
                                                  proto::open_metadata meta, bool relay_ended_tls) {
  auto counted = ctx_.count_stream();
  const agent::service_config& svc = config_;
  std::shared_ptr<asio::ssl::context> web_tls;
  std::string host;
  {
    std::lock_guard lock(ctx_.mutex);
    web_tls = visitor_tls();
    host = host_;
  }
  // In the clear: plain HTTP the service asked for, or HTTP the relay decrypted (inspect mode).
  using proto::visitor_scheme;
  const bool inspect = relay_ended_tls;
  bool clear = meta.scheme == visitor_scheme::plain_http ||
               (meta.scheme == visitor_scheme::https_ended && inspect);
  if ((meta.scheme == visitor_scheme::plain_http && !svc.plain_http) || (inspect && !clear)) {
    l->refuse(
        *s, proto::stream_status::forbidden,
        "this share URL is not served in that form (" + std::string(to_wire(meta.scheme)) + ")");
    co_return;
  }
  if (!web_tls && !clear) {
    l->refuse(*s, proto::stream_status::unreachable,
              "the share URL's certificate has not arrived yet");
    co_return;
  }
  l->accept(*s);
  std::optional<e2ee::secure_stream> tls;
  std::unique_ptr<http::duplex> visitor;
  if (clear) {
    visitor = http::make_stream_duplex(s);
  } else {
    tls.emplace(web_tls->native_handle(), s, e2ee::tls_role::server, "");
    auto shaking = tls->handshake();
    auto shaken = co_await with_deadline(std::move(shaking), ctx_.config.connect_timeout);
    if (!shaken || *shaken) {
      {
        std::lock_guard lock(ctx_.mutex);
        if (ctx_.tls_failures.allow())
          spdlog::info("service {}: TLS handshake with visitor {} failed: {}", svc.name,
                       meta.visitor_address, shaken ? shaken->message() : "timed out");
      }
      tls->abort(proto::stream_status::cancelled);
      l->stream_finished(s->id());
      co_return;
    }
    if (acme::answered_acme_challenge(tls->native_handle())) {
      // A CA's TLS-ALPN-01 validation: the handshake was the answer; nothing follows (RFC 8737).
      spdlog::info("service {}: answered the ACME CA's validation from {}", svc.name,
                   meta.visitor_address);
      boost::system::error_code ignored;
      auto closing = tls->shutdown_send(ignored);
      co_await std::move(closing);
      s->finish();
      co_return;
    }
    visitor = http::make_tls_duplex(*tls);
    bool waiting_for_acme = false;
    {
      std::lock_guard lock(ctx_.mutex);
      waiting_for_acme = certificate_pending();
    }
    if (waiting_for_acme) {
      auto answering = http::answer_and_close(
          *visitor, http::simple_response(503, "Service Unavailable",
                                          "the share URL's certificate is not here yet\n"));
      co_await with_deadline(std::move(answering), ctx_.config.connect_timeout);
      s->finish();
      co_return;
    }
  }
  tcp::socket socket(l->executor());
  auto connected = co_await ctx_.connect_local(socket, target_.address);
  if (!connected || *connected) {
    std::string why = connected ? connected->message() : "connect timed out";
    {
      std::lock_guard lock(ctx_.mutex);
      if (target_.errors.allow())
        spdlog::warn("local service {} ({}) is not answering: {}",
                     format_host_port(svc.local_host, svc.local_port), svc.name, why);
    }
    auto answering = http::answer_and_close(
        *visitor,
        http::simple_response(502, "Bad Gateway", "the tunnel's local service is not answering\n"));
    co_await with_deadline(std::move(answering), ctx_.config.connect_timeout);
    s->finish();
    co_return;
  }
  auto local = http::make_tcp_duplex(socket);
  http::proxy_options options;
  options.forwarded = {meta.visitor_address,
                       meta.scheme == visitor_scheme::plain_http ? "http" : "https", host};
  boost::system::error_code bad_address;
  auto visitor_ip = asio::ip::make_address(meta.visitor_address, bad_address);
  if (svc.rules && !inspect) {  // in inspect mode the relay has checked
    options.screen = [&ctx = ctx_, rules = svc.rules, host, visitor_ip,
                      name = svc.name](const http::request_head& head) -> std::string {
      auto verdict = rules->check(head, visitor_ip);
      if (verdict == http::access_rules::verdict::allow) return {};
      std::lock_guard lock(ctx.mutex);
      if (ctx.access_refusals.allow())
        spdlog::info("service {}: refused visitor {}: {}", name, visitor_ip.to_string(),
                     http::describe(verdict));
      return http::refusal_response(verdict, host);
    };
  }
  options.on_request = [last = last_request_] {
    last->store(std::chrono::steady_clock::now().time_since_epoch().count());
  };
  auto proxying = http::proxy(*visitor, *local, std::move(options));
  auto result = co_await std::move(proxying);
  if (!result.error.empty())
    spdlog::debug("service {}: visitor {}: {}", svc.name, meta.visitor_address, result.error);
  s->finish();
}

}  // namespace burrow::kinds::share_url
