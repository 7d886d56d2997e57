// Relay: agent and `burrow connect` links: handshake, hello, token, registration of services,
// share URL claims and certificate signing.
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/address.hpp"
#include "core/deadline.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "kinds/registry.hpp"
#include "link/handshake.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"
#include "relay/kind_handler.hpp"
#include "relay/relay.hpp"
#include "relay/visitor_info.hpp"
#include "tls/certs.hpp"

namespace burrow::relay {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

bool valid_service_name(const std::string& n) {
  if (n.empty() || n.size() > 63) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  return true;
}

// Keeps the registered reply, refusals included, well under the control message limit.
constexpr std::size_t max_services_per_register = 256;

// Tells a refused agent why, briefly, then lets the caller close. No lambda coroutine and no
// temporaries inside co_await: GCC 12 destroys such temporaries twice.
asio::awaitable<void> refuse_agent(link::tls_stream& tls, std::string code, std::string message) {
  proto::control_message m = proto::link_error{std::move(code), std::move(message)};
  auto write = link::write_control_frame(tls, std::move(m));
  co_await with_deadline(std::move(write), std::chrono::milliseconds(2000));
}

asio::awaitable<boost::system::error_code> tls_accept(link::tls_stream& tls) {
  auto [ec] = co_await tls.async_handshake(asio::ssl::stream_base::server,
                                           asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

}  // namespace

asio::awaitable<void> relay::link_session(tcp::socket socket, admitted conn) {
  std::string who = peer_text(conn.peer);
  link::tls_stream tls(std::move(socket), tls_);

  auto handshake = co_await with_deadline(tls_accept(tls), handshake_timeout());
  if (!handshake || *handshake) {
    rejected(
        listener::agent, handshake ? "tls_failed" : "handshake_timeout", who,
        handshake ? "TLS handshake failed: " + handshake->message() : "TLS handshake timed out");
    co_return;
  }
  if (link::negotiated_protocol(tls) != "burrow/1") {
    rejected(listener::agent, "no_alpn", who, "the client did not offer ALPN burrow/1");
    co_return;
  }
  auto first = co_await with_deadline(link::read_control_frame(tls), handshake_timeout());
  if (!first) {
    rejected(listener::agent, "hello_timeout", who,
             "no hello within " + std::to_string(handshake_timeout().count()) + "ms");
    co_return;
  }
  if (!first->message) {
    rejected(listener::agent, "bad_hello", who, "bad hello: " + first->error);
    co_return;
  }
  auto* hello = std::get_if<proto::hello>(&*first->message);
  if (!hello) {
    {
      std::string why = "the first message on a link must be hello";
      rejected(listener::agent, "protocol_error", who, why, true);
      co_await refuse_agent(tls, "protocol_error", why);
    }
    co_return;
  }
  if (std::find(hello->versions.begin(), hello->versions.end(), proto::protocol_version) ==
      hello->versions.end()) {
    {
      std::string why =
          "this relay speaks link protocol version " + std::to_string(proto::protocol_version);
      rejected(listener::agent, "unsupported_version", who, why, true);
      co_await refuse_agent(tls, "unsupported_version", why);
    }
    co_return;
  }
  const bool visitor = hello->role == "visitor";
  if (!visitor && hello->role != "agent") {
    {
      std::string why = "this port accepts agents and visitors (burrow connect)";
      rejected(listener::agent, "unsupported_role", who, why, true);
      co_await refuse_agent(tls, "unsupported_role", why);
    }
    co_return;
  }
  // Visitors need no agent token: a service that wants one asks for a visitor token per stream.
  std::shared_ptr<token_grant> grant;
  if (!visitor) grant = tokens_.authenticate(hello->token);
  if (!visitor && !grant) {
    {
      std::string why = "the relay did not accept this token";
      rejected(listener::agent, "bad_token", who, why, true);
      co_await refuse_agent(tls, "bad_token", why);
    }
    co_return;
  }
  if (hello->session.empty() || hello->session.size() > 64) {
    {
      std::string why = "hello needs a session id of 1 to 64 characters";
      rejected(listener::agent, "protocol_error", who, why, true);
      co_await refuse_agent(tls, "protocol_error", why);
    }
    co_return;
  }
  const std::string& asked = hello->link_encryption;
  const bool plain = asked == "none";
  if ((!asked.empty() && asked != "tls" && !plain) ||
      (plain && config_.link_encryption != link::link_encryption::none)) {
    {
      std::string why = plain ? "this relay only runs encrypted links (--link-encryption " +
                                    std::string(to_string(config_.link_encryption)) + ")"
                              : "hello's link_encryption must be tls or none";
      rejected(listener::agent, "link_encryption", who, why, true);
      co_await refuse_agent(tls, "link_encryption", why);
    }
    co_return;
  }
  if (stopping_) {
    {
      std::string why = "the relay is shutting down";
      rejected(listener::agent, "going_away", who, why, true);
      co_await refuse_agent(tls, "going_away", why);
    }
    co_return;
  }

  // Sealed frames when the dialer offers them, unless this relay wants every frame in TLS.
  auto mode = link::link_encryption::full;
  if (plain)
    mode = link::link_encryption::none;
  else if (hello->sealed_frames && config_.link_encryption != link::link_encryption::full)
    mode = link::link_encryption::tls;
  auto lim = config_.limits;
  lim.stream_idle_timeout = stream_idle_timeout_.load();
  proto::welcome w{proto::protocol_version,
                   lim.max_frame,
                   lim.initial_window,
                   lim.max_streams,
                   static_cast<std::uint32_t>(lim.ping_interval.count()),
                   static_cast<std::uint32_t>(lim.ping_timeout.count()),
                   std::string(plain ? "none" : ""),
                   mode == link::link_encryption::tls,
                   hello->own_records && !plain};
  auto send_welcome = link::write_control_frame(tls, w);
  if (auto sent = co_await with_deadline(std::move(send_welcome), handshake_timeout());
      !sent || *sent) {
    spdlog::info("connection from {}: could not send welcome", who);
    co_return;
  }

  std::string name = (visitor ? "visitor " : "agent ") + who + " session " +
                     hello->session.substr(0, 8) + " link " + std::to_string(hello->link_index);
  auto l = std::make_shared<link::link>(std::move(tls), link::link_role::acceptor, lim, name, mode,
                                        w.own_records);
  if (plain) spdlog::warn("{}: link without encryption", name);
  if (grant) {
    l->set_rate_limiter(grant->limiter());  // every stream of the link counts against the cap
    if (!grant->add_link(l)) {
      spdlog::info("{}: token {} was revoked during the handshake", name, grant->id());
      co_return;
    }
  }
  {
    std::lock_guard lock(links_mutex_);
    links_.push_back(l);
  }
  link::link* raw = l.get();
  link::link::handlers h;
  if (visitor) {
    spdlog::info("{} connected ({}, {})", name, hello->software, l->protection());
    h.on_control = [name](proto::control_message) {
      spdlog::warn("{}: control message from a visitor ignored", name);
    };
    h.on_open = [this, raw, peer = conn.peer](std::shared_ptr<link::stream> s,
                                              proto::open_metadata meta) {
      meta.visitor_address = address_text(peer.address());
      meta.visitor_port = peer.port();
      meta.relay_address.clear();
      meta.relay_port = 0;
      spawn_logged(raw->executor(),
                   visitor_stream(raw->shared_from_this(), std::move(s), std::move(meta)),
                   "visitor stream");
    };
  } else {
    spdlog::info("{} connected ({}, token {}, {})", name, hello->software, grant->id(),
                 l->protection());
    serve_agent(h, raw, owner_id{grant->id(), hello->session}, name, grant);
  }
  std::string reason = co_await l->run(std::move(h));
  if (!visitor) {
    registry_->detach(raw);
    names_.detach(raw);
  }
  spdlog::info("{} disconnected: {}", name, reason);
}

void relay::serve_agent(link::link::handlers& h, link::link* raw, owner_id owner,
                        const std::string& name, std::shared_ptr<token_grant> grant) {
  h.on_control = [this, raw, owner, name, grant](proto::control_message m) {
    if (auto* req = std::get_if<proto::cert_request>(&m)) {
      raw->send_control(sign_share_cert(owner, *req, name));
      return;
    }
    if (auto* u = std::get_if<proto::unregister>(&m)) {
      for (auto& n : u->names)
        if (names_.release(n, owner)) spdlog::info("{}: service {} released by its agent", name, n);
      return;
    }
    auto* reg = std::get_if<proto::register_services>(&m);
    if (!reg) {
      spdlog::warn("{}: unexpected control message ignored", name);
      return;
    }
    if (reg->services.size() > max_services_per_register) {
      raw->send_control(proto::link_error{
          "too_many_services",
          "at most " + std::to_string(max_services_per_register) + " services per register"});
      return;
    }
    auto self = raw->shared_from_this();
    proto::registered out;
    std::lock_guard claims(claims_mutex_);
    claim_context ctx{owner, *grant,        tokens_,        *registry_, names_,
                      self,  config_.ports, config_.domain, https_port_};
    for (auto& spec : reg->services) {
      proto::service_result r;
      const kind_handler* kind = nullptr;
      if (!valid_service_name(spec.name)) {
        r = proto::refused(spec, "bad_name",
                           "service names are 1-63 letters, digits, '-', '_' or '.'");
      } else if (spec.unsupported) {
        r = proto::refused(
            spec, spec.unsupported->code,
            "this relay offers " + kinds::known_kinds() + ", not " + spec.unsupported->asked);
      } else {
        kind = &kinds::relay_side(spec.kind);
        r = kind->claim(ctx, spec);
      }
      if (r.ok)
        spdlog::info("{}: service {} {}", name, spec.name, kind->granted(r));
      else
        spdlog::warn("{}: service {} refused: {}", name, spec.name, r.message);
      out.services.push_back(std::move(r));
    }
    raw->send_control(out);
  };
  h.on_open = [raw](std::shared_ptr<link::stream> s, proto::open_metadata) {
    raw->refuse(*s, proto::stream_status::forbidden, "agents cannot open streams on this relay");
  };
}

proto::certificate relay::sign_share_cert(const owner_id& owner, const proto::cert_request& req,
                                          const std::string& who) {
  proto::certificate out;
  out.name = req.name;
  auto held = names_.kind_held(req.name, owner);
  if (!held || !kinds::relay_side(*held).signs_certificates()) {
    out.code = "not_yours";
    out.message = "this agent holds no share URL named " + req.name;
    spdlog::warn("{}: certificate for {} refused: {}", who, req.name, out.message);
    return out;
  }
  std::string host = req.name + "." + config_.domain;
  try {
    auto lifetime = share_cert_lifetime_.load();
    out.cert = tls::sign_csr(state_.ca, req.csr, host, lifetime);
    out.ca = state_.ca.cert_pem;
    out.ok = true;
    spdlog::info("{}: signed a certificate for {} valid {}s", who, host, lifetime.count());
  } catch (const std::exception& e) {
    out.code = "bad_request";
    out.message = std::string("certificate request refused: ") + e.what();
    spdlog::warn("{}: {}", who, out.message);
  }
  return out;
}

}  // namespace burrow::relay
