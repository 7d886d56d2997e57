// End to end: registration with the visitor token's hash, the `burrow connect` command to give
// visitors, and each stream's TLS (or session-keyed records) between visitor and agent.
#include "kinds/tcp_e2ee/agent_side.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "core/address.hpp"
#include "core/deadline.hpp"
#include "core/secret.hpp"
#include "e2ee/secure_stream.hpp"
#include "e2ee/session_keys.hpp"
#include "e2ee/splice.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"

namespace burrow::kinds::tcp_e2ee {

namespace asio = boost::asio;

agent_side::agent_side(agent::service_context& ctx, agent::service_config config)
    : ctx_(ctx),
      target_{ctx.resolve_local(config)},
      identity_(ctx.identity()),
      config_(ctx.named_for_this_agent(std::move(config))),
      session_owner_(ctx.e2ee_session_owners++) {}

std::optional<proto::service_spec> agent_side::registration() const {
  proto::service_spec spec{config_.name, config_.kind, 0};
  if (!config_.visitor_token.empty())
    spec.visitor_token_sha256 = hex(sha256(config_.visitor_token));
  return spec;
}

void agent_side::on_accepted(link::link&, const proto::service_result&) {
  if (!announced_) announce();
  announced_ = true;
}

// Its end-to-end TLS, or its session's keys, authenticate a stream of the visitor's own bytes.
bool agent_side::accepts_sealed(const proto::open_metadata& meta) const {
  return meta.scheme == proto::visitor_scheme::own_tls;
}

asio::awaitable<void> agent_side::serve(std::shared_ptr<link::link> l,
                                        std::shared_ptr<link::stream> s,
                                        proto::open_metadata meta) {
  if (meta.e2ee_session == e2ee::new_session) {  // no local connection
    auto holding = session_stream(std::move(l), std::move(s), std::move(meta));
    co_await std::move(holding);
    co_return;
  }
  auto counted = ctx_.count_stream();
  // A stream keyed from a session is checked before the local service sees a connection.
  std::unique_ptr<link::record_protection> keyed;
  if (!meta.e2ee_session.empty()) {
    keyed = keyed_stream(*l, *s, meta);
    if (!keyed) co_return;
  }
  auto socket = co_await agent::accept_with_local(ctx_, config_, target_, *l, *s);
  if (!socket) co_return;
  std::optional<e2ee::secure_stream> tls;
  if (keyed) {
    tls.emplace(s, std::move(keyed));
  } else {
    tls.emplace(identity_.e2ee_tls.native_handle(), s, e2ee::tls_role::server);
    auto shaking = tls->handshake();
    auto shaken = co_await with_deadline(std::move(shaking), ctx_.config.connect_timeout);
    if (!shaken || *shaken) {
      std::unique_lock lock(ctx_.mutex);
      if (ctx_.tls_failures.allow())
        spdlog::warn("service {}: end-to-end handshake with visitor {} failed: {}", config_.name,
                     meta.visitor_address, shaken ? shaken->message() : "timed out");
      tls->abort(proto::stream_status::cancelled);
      l->stream_finished(s->id());
      boost::system::error_code ec;
      socket->set_option(asio::socket_base::linger(true, 0), ec);
      co_return;
    }
  }
  if (!co_await agent::send_proxy_header(*socket, config_, meta, *l, *s)) co_return;
  co_await e2ee::splice(*socket, *tls);
}

void agent_side::announce() const {
  const auto& c = config_;
  const auto& fingerprint = identity_.fingerprint;
  // Port 0: connect picks a free port and prints it. The service's own port would clash on
  // this host, and any other fixed guess may be taken where the visitor runs it.
  std::string command = fmt::format(
      "burrow connect {} --relay {}{} --pin {} --listen 127.0.0.1:0", c.name, ctx_.config.relay,
      ctx_.config.relay_pin.empty() ? "" : " --relay-pin " + ctx_.config.relay_pin, fingerprint);
  if (!c.visitor_token.empty()) command += " --visitor-token \"$BURROW_VISITOR_TOKEN\"";
  std::string line = fmt::format("tcp {} is reachable end to end as {} (certificate {})",
                                 format_host_port(c.local_host, c.local_port), c.name, fingerprint);
  std::string out = line + "\nvisitors run: " + command + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", c.name, line);
}

std::unique_ptr<agent::service> make_agent_side(agent::service_context& ctx,
                                                agent::service_config config) {
  return std::make_unique<agent_side>(ctx, std::move(config));
}

}  // namespace burrow::kinds::tcp_e2ee
