// Agent: dialling and redialling the relay, registration, and local connections for streams.
#include "agent/agent.hpp"

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <optional>

#include "acme/client.hpp"
#include "acme/jws.hpp"
#include "acme/tls_alpn.hpp"
#include "core/address.hpp"
#include "core/backoff.hpp"
#include "core/deadline.hpp"
#include "core/drained.hpp"
#include "core/duration.hpp"
#include "core/heap.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "e2ee/contexts.hpp"
#include "e2ee/identity.hpp"
#include "e2ee/secure_stream.hpp"
#include "e2ee/splice.hpp"
#include "http/access_rules.hpp"
#include "http/duplex.hpp"
#include "http/proxy.hpp"
#include "kinds/share_url/share_cert.hpp"
#include "link/dial.hpp"
#include "link/drain.hpp"
#include "link/handshake.hpp"
#include "link/redial.hpp"
#include "link/reregister.hpp"
#include "link/stream.hpp"
#include "tls/contexts.hpp"

namespace burrow::agent {

namespace asio = boost::asio;
using asio::ip::tcp;
using kinds::share_url::accept_share_cert;
using kinds::share_url::load_share_cert;
using kinds::share_url::make_share_cert_request;
using kinds::share_url::share_cert;
using kinds::share_url::share_url_host;

namespace {

// Connected, registered for reads only (no wake-up for every writable edge), with TCP_INQ (no
// read to learn that one emptied it) and TCP_NODELAY (requests and responses go out at once).
asio::awaitable<boost::system::error_code> tcp_connect_one(tcp::socket& s, tcp::endpoint ep) {
  auto [ec] = co_await s.async_connect(ep, asio::as_tuple(asio::use_awaitable));
  if (!ec) link::register_afresh(s, ep.protocol(), ec);
  if (ec) co_return ec;
  report_queued_bytes(s);
  s.set_option(tcp::no_delay(true), ec);
  co_return boost::system::error_code();
}

tcp::endpoint endpoint_or_unspecified(const std::string& address, std::uint16_t port) {
  boost::system::error_code ec;
  auto a = asio::ip::make_address(address, ec);
  return ec ? tcp::endpoint() : tcp::endpoint(a, port);
}

}  // namespace

agent::agent(agent_config config)
    : config_(std::move(config)),
      session_(hex(sha256(random_token())).substr(0, 32)),
      tls_(tls::make_client_context({"burrow/1"},
                                    tls::trust_for_peer(config_.relay_pin, config_.relay_ca))),
      workers_(threads_for_links(config_.links)),
      e2ee_sessions_(e2ee::session_registry::default_max_sessions, config_.e2ee_session_max_age) {
  auto hp = parse_host_port(config_.relay, std::uint16_t{7835});
  relay_host_ = hp->host;
  relay_port_ = std::to_string(hp->port);
  asio::io_context resolver_context;
  tcp::resolver resolver(resolver_context);
  for (auto& svc : config_.services) {
    service_state st;
    st.config = svc;
    st.assigned_port = svc.remote_port;
    boost::system::error_code ec;
    auto results = resolver.resolve(svc.local_host, std::to_string(svc.local_port), ec);
    if (ec || results.empty())
      throw config_error("cannot resolve local address " + svc.local_host + ": " + ec.message());
    st.target = results.begin()->endpoint();
    services_.push_back(std::move(st));
  }
  // End-to-end services need the key; share URLs use its fingerprint for their default names.
  bool needs_identity = std::any_of(
      services_.begin(), services_.end(),
      [](const service_state& st) { return st.config.kind != proto::tunnel_kind::tcp_port; });
  if (needs_identity) {
    state_dir_ = config_.state_dir.empty() ? e2ee::default_agent_state_dir() : config_.state_dir;
    try {
      identity_ = config_.e2ee_cert.empty()
                      ? e2ee::load_or_create_identity(state_dir_)
                      : e2ee::load_identity_files(config_.e2ee_cert, config_.e2ee_key);
    } catch (const std::exception& e) {
      throw config_error(std::string("end-to-end identity: ") + e.what());
    }
    fingerprint_ = tls::fingerprint_sha256(identity_.cert_pem);
    e2ee_tls_.emplace(e2ee::make_server_context(identity_));
    // A name the relay holds for this agent alone: the same after a restart (the key is kept),
    // different from every other agent's (the key is not).
    for (auto& st : services_)
      if (st.config.kind != proto::tunnel_kind::tcp_port && !st.config.name_given)
        st.config.name += "-" + fingerprint_.substr(std::string("sha256:").size(), 8);
  }
  for (auto& st : services_) {
    if (st.config.cert_file.empty()) continue;
    try {
      st.web_tls = load_share_cert(st.config.cert_file, st.config.key_file).tls;
      st.own_cert = true;
    } catch (const std::exception& e) {
      throw config_error(std::string("service ") + st.config.name + ": " + e.what());
    }
  }
}

agent::~agent() = default;

int agent::run() {
  log_link_plan(config_.links, workers_.size(), config_.relay);
  for (unsigned i = 0; i < config_.links; ++i)
    spawn_logged(workers_.at(i % workers_.size()).get_executor(), link_slot(i),
                 "link " + std::to_string(i));
  bool http = std::any_of(services_.begin(), services_.end(),
                          [](const service_state& st) { return is_share_url(st.config.kind); });
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  for (auto& st : services_) st.last_request->store(now);
  if (http) spawn_logged(workers_.at(0).get_executor(), share_url_upkeep(), "share URL upkeep");
  spawn_logged(workers_.at(0).get_executor(), trim_heap_periodically(stopping_), "heap trim");
  workers_.run([this] { spawn_logged(workers_.at(0).get_executor(), shutdown(), "shutdown"); });
  return exit_code_;
}

void agent::fatal(int code, const std::string& message) {
  if (stopping_.exchange(true)) return;
  spdlog::error("{}", message);
  exit_code_ = code;
  workers_.stop();
}

proto::register_services agent::registration() {
  std::lock_guard lock(mutex_);
  proto::register_services r;
  for (auto& s : services_) {
    if (s.expired) continue;
    proto::service_spec spec{s.config.name, s.config.kind, s.assigned_port};
    spec.plain_http = s.config.plain_http;
    if (s.config.kind == proto::tunnel_kind::share_inspect && s.config.rules)
      spec.access = s.config.rules->to_spec();
    if (!s.config.visitor_token.empty())
      spec.visitor_token_sha256 = hex(sha256(s.config.visitor_token));
    r.services.push_back(std::move(spec));
  }
  return r;
}

asio::awaitable<link::dial_result> agent::connect_once(unsigned index) {
  link::dial_options o{config_.relay,
                       relay_host_,
                       relay_port_,
                       config_.relay_pin,
                       config_.relay_ca,
                       config_.connect_timeout,
                       "relay " + config_.relay + " link " + std::to_string(index),
                       config_.link_encryption};
  // dial_relay fills link_encryption from the options.
  proto::hello hello{{proto::protocol_version}, "agent", config_.token, session_, index,
                     "burrow/" BURROW_VERSION,  ""};
  auto dialling = link::dial_relay(std::move(o), tls_, std::move(hello));
  co_return co_await std::move(dialling);
}

asio::awaitable<void> agent::link_slot(unsigned index) {
  link::redial_plan plan;
  plan.relay = config_.relay;
  plan.index = index;
  plan.backoff_first = config_.backoff_first;
  plan.backoff_max = config_.backoff_max;
  plan.stopping = &stopping_;
  plan.dial = [this, index] { return connect_once(index); };
  plan.serve = [this, index](std::shared_ptr<link::link> l) { return serve_link(index, l); };
  plan.fatal = [this](const link::dial_result& r) {
    fatal(r.failure == link::dial_failure::bad_token        ? exit_bad_token
          : r.failure == link::dial_failure::relay_identity ? exit_relay_identity
                                                            : exit_config,
          r.error);
  };
  co_await link::redial(std::move(plan));
}

asio::awaitable<std::string> agent::serve_link(unsigned index, std::shared_ptr<link::link> l) {
  {
    std::lock_guard lock(mutex_);
    links_.push_back(l);
  }
  link::link* raw = l.get();
  link::link::handlers h;
  h.on_control = [this, raw](proto::control_message m) {
    if (auto* r = std::get_if<proto::registered>(&m))
      on_registered(*raw, *r);
    else if (auto* c = std::get_if<proto::certificate>(&m))
      on_certificate(*c);
    else if (auto* e = std::get_if<proto::link_error>(&m))
      spdlog::error("relay: {} ({})", e->message, e->code);
  };
  h.on_open = [this, raw](std::shared_ptr<link::stream> s, proto::open_metadata meta) {
    std::size_t found = services_.size();
    for (std::size_t i = 0; i < services_.size(); ++i)
      if (services_[i].config.name == meta.service) found = i;
    bool expired = false;
    if (found != services_.size()) {
      std::lock_guard lock(mutex_);
      expired = services_[found].expired;
    }
    if (found == services_.size() || expired) {
      raw->refuse(*s, proto::stream_status::no_service, "no such service on this agent");
      return;
    }
    // Frames of a sealed stream come from outside the link's TLS: only a stream whose bytes
    // this side authenticates (its end-to-end TLS, a share URL's TLS) may be one.
    const service_config& svc = services_[found].config;
    const bool authenticated = meta.scheme == proto::visitor_scheme::own_tls &&
                               svc.kind != proto::tunnel_kind::share_inspect &&
                               svc.kind != proto::tunnel_kind::tcp_port;
    if (s->sealed() && !authenticated) {
      spdlog::warn("service {}: the relay opened a sealed stream for bytes in the clear; refused",
                   svc.name);
      raw->refuse(*s, proto::stream_status::protocol_error, "a sealed stream for this service");
      return;
    }
    if (svc.kind == proto::tunnel_kind::tcp_e2ee &&
        meta.e2ee_session == e2ee::new_session) {  // no local connection
      spawn_logged(
          raw->executor(),
          e2ee_session_stream(raw->shared_from_this(), std::move(s), std::move(meta), found),
          "end-to-end session");
      return;
    }
    spawn_logged(raw->executor(),
                 local_session(raw->shared_from_this(), std::move(s), std::move(meta), found),
                 "stream");
  };
  h.on_go_away = [index] {
    spdlog::info("link {}: the relay is going away; will reconnect", index);
  };
  l->send_control(registration());
  co_return co_await l->run(std::move(h));
}

void agent::on_registered(link::link& l, const proto::registered& r) {
  std::lock_guard lock(mutex_);
  proto::register_services retry;
  bool any_ok = false;
  for (auto& res : r.services) {
    auto it = std::find_if(services_.begin(), services_.end(),
                           [&](auto& s) { return s.config.name == res.name; });
    if (it == services_.end()) continue;
    auto& s = *it;
    if (res.ok) {
      any_ok = true;
      s.refused_logged = false;
      if (s.config.kind == proto::tunnel_kind::tcp_e2ee) {
        if (!s.announced) announce_e2ee(s);
        s.announced = true;
        continue;
      }
      if (is_share_url(s.config.kind)) {
        s.public_address = res.public_address;
        s.host = share_url_host(res.public_address);
        if (!s.config.acme_directory.empty()) {
          if (!s.web_tls) {
            // Until the CA's certificate arrives: a placeholder that answers its validations.
            s.web_tls =
                acme_context(tls::make_self_signed(s.host, {s.host}, std::chrono::hours(24)));
          }
          auto index = static_cast<std::size_t>(&s - services_.data());
          if (!s.acme_cert) start_acme(index);
          if (s.acme_cert) announce_share_url(s);
          continue;
        }
        const bool blind = s.config.kind == proto::tunnel_kind::share_blind;
        if (blind) maybe_request_cert(l, s);
        if (!blind || s.web_tls) announce_share_url(s);
        continue;
      }
      if (s.assigned_port != res.remote_port || s.public_address != res.public_address) {
        s.assigned_port = res.remote_port;
        s.public_address = res.public_address;
        std::string line = fmt::format("tcp {} is public at {}",
                                       format_host_port(s.config.local_host, s.config.local_port),
                                       res.public_address);
        std::fputs((line + "\n").c_str(), stdout);
        std::fflush(stdout);
        spdlog::info("service {}: {}", s.config.name, line);
      }
      continue;
    }
    bool remembered = s.config.remote_port == 0 && s.assigned_port != 0;
    if (remembered) {
      // The port this agent had is gone (taken while we were away): take any port instead.
      spdlog::warn("service {}: port {} is no longer ours ({}); asking for another", s.config.name,
                   s.assigned_port, res.message);
      s.assigned_port = 0;
      retry.services.push_back({s.config.name, proto::tunnel_kind::tcp_port, 0});
      continue;
    }
    if (!s.refused_logged) {
      spdlog::error("the relay refused service {} (remote port {}): {} ({})", s.config.name,
                    res.remote_port, res.message, res.code);
      s.refused_logged = true;
    }
  }
  if (!retry.services.empty()) l.send_control(retry);
  if (any_ok) ever_registered_ = true;
  bool all_refused = !any_ok && retry.services.empty() && r.services.size() == services_.size();
  if (all_refused && !ever_registered_) {
    asio::post(workers_.at(0).get_executor(), [this] {
      fatal(exit_config,
            "the relay refused every service; nothing to do. Pick another "
            "--remote-port, or leave it out to get any free port");
    });
  }
}

void agent::announce_e2ee(const service_state& s) {
  const auto& c = s.config;
  std::uint16_t suggested =
      c.local_port >= 1024 ? c.local_port : static_cast<std::uint16_t>(10000 + c.local_port);
  std::string command = fmt::format(
      "burrow connect {} --relay {}{} --pin {} --listen 127.0.0.1:{}", c.name, config_.relay,
      config_.relay_pin.empty() ? "" : " --relay-pin " + config_.relay_pin, fingerprint_,
      suggested);
  if (!c.visitor_token.empty()) command += " --visitor-token \"$BURROW_VISITOR_TOKEN\"";
  std::string line =
      fmt::format("tcp {} is reachable end to end as {} (certificate {})",
                  format_host_port(c.local_host, c.local_port), c.name, fingerprint_);
  std::string out = line + "\nvisitors run: " + command + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", c.name, line);
}

void agent::announce_share_url(service_state& s) {
  if (s.announced) return;
  s.announced = true;
  std::string line =
      fmt::format("http {} is public at {}",
                  format_host_port(s.config.local_host, s.config.local_port), s.public_address);
  std::string out = line + "\n";
  if (s.config.kind == proto::tunnel_kind::share_inspect)
    out +=
        "visitors trust the relay's CA (`burrow relay ca` prints it); the relay ends TLS and "
        "logs each request\n";
  if (s.config.kind == proto::tunnel_kind::share_blind && !s.own_cert)
    out += fmt::format(
        "visitors trust the relay's CA (`burrow relay ca` prints it; a copy is in {}): curl "
        "--cacert {} {}\n",
        (state_dir_ / "relay-ca.pem").string(), (state_dir_ / "relay-ca.pem").string(),
        s.public_address);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", s.config.name, line);
}

// Called with mutex_ held, on `l`'s thread.
void agent::maybe_request_cert(link::link& l, service_state& s) {
  if (s.own_cert || s.host.empty() || !s.config.acme_directory.empty()) return;
  auto now = std::chrono::steady_clock::now();
  bool due = !s.web_tls || now >= s.renew_at;
  bool waiting = s.requested_at != std::chrono::steady_clock::time_point{} &&
                 now - s.requested_at < std::chrono::seconds(10);
  if (!due || waiting) return;
  try {
    l.send_control(make_share_cert_request(s.config.name, identity_));
    s.requested_at = now;
    spdlog::debug("service {}: asked the relay for a certificate for {}", s.config.name, s.host);
  } catch (const std::exception& e) {
    spdlog::error("service {}: cannot make a certificate request: {}", s.config.name, e.what());
  }
}

void agent::on_certificate(const proto::certificate& c) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(services_.begin(), services_.end(), [&](const service_state& st) {
    return st.config.name == c.name && is_share_url(st.config.kind);
  });
  if (it == services_.end()) return;
  auto& s = *it;
  try {
    auto got = accept_share_cert(c, identity_, s.host);
    bool renewed = s.web_tls != nullptr;
    s.web_tls = std::move(got.tls);
    s.renew_at = got.renew_at;
    s.requested_at = {};
    spdlog::info("service {}: {} certificate for {} from the relay's CA, renewed in {}s",
                 s.config.name, renewed ? "renewed the" : "got a", s.host,
                 std::chrono::duration_cast<std::chrono::seconds>(got.renew_at -
                                                                  std::chrono::steady_clock::now())
                     .count());
    if (!c.ca.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(state_dir_, ec);
      std::ofstream out(state_dir_ / "relay-ca.pem", std::ios::binary | std::ios::trunc);
      out << c.ca;
      if (!out) spdlog::warn("cannot write {}", (state_dir_ / "relay-ca.pem").string());
    }
    announce_share_url(s);
  } catch (const std::exception& e) {
    spdlog::error("service {}: no certificate: {}; asking again shortly", s.config.name, e.what());
  }
}

void agent::expire(service_state& s, const std::string& why) {
  s.expired = true;
  std::string line = fmt::format("share URL {} expired ({}); its name is released",
                                 s.public_address.empty() ? s.config.name : s.public_address, why);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", s.config.name, line);
  proto::unregister gone{{s.config.name}};
  for (auto& w : links_)
    if (auto l = w.lock()) asio::post(l->executor(), [l, gone] { l->send_control(gone); });
  bool all_gone = std::all_of(services_.begin(), services_.end(),
                              [](const service_state& st) { return st.expired; });
  if (all_gone) {
    asio::post(workers_.at(0).get_executor(), [this] {
      spdlog::info("every service has expired; the agent stops");
      spawn_logged(workers_.at(0).get_executor(), shutdown(), "shutdown");
    });
  }
}

asio::awaitable<void> agent::share_url_upkeep() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping_) {
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    std::lock_guard lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    for (auto& s : services_) {
      if (!is_share_url(s.config.kind) || s.expired) continue;
      auto idle = now - std::chrono::steady_clock::time_point(
                            std::chrono::steady_clock::duration(s.last_request->load()));
      if (s.config.expire_in.count() > 0 && now - started_ >= s.config.expire_in)
        expire(s, "expire-in " + format_duration(s.config.expire_in));
      else if (s.config.idle_expiry.count() > 0 && idle >= s.config.idle_expiry)
        expire(s, "no request for " + format_duration(s.config.idle_expiry));
    }
    for (std::size_t i = 0; i < services_.size(); ++i) {
      auto& s = services_[i];
      if (s.config.acme_directory.empty() || s.host.empty() || s.expired || s.acme_running)
        continue;
      bool due = s.acme_cert ? now >= s.renew_at : now >= s.acme_retry_at;
      if (due) start_acme(i);
    }
    std::shared_ptr<link::link> live;
    for (auto& w : links_)
      if (auto l = w.lock(); l && !live) live = std::move(l);
    if (!live) continue;
    for (std::size_t i = 0; i < services_.size(); ++i) {
      auto& s = services_[i];
      if (s.config.kind != proto::tunnel_kind::share_blind || s.own_cert || s.host.empty() ||
          s.expired)
        continue;
      bool due = !s.web_tls || now >= s.renew_at;
      bool waiting = s.requested_at != std::chrono::steady_clock::time_point{} &&
                     now - s.requested_at < std::chrono::seconds(10);
      if (!due || waiting) continue;
      asio::post(live->executor(), [this, live, i] {
        std::lock_guard inner(mutex_);
        maybe_request_cert(*live, services_[i]);
      });
    }
  }
}

std::shared_ptr<asio::ssl::context> agent::acme_context(const tls::key_pair& pair) {
  auto ctx = std::make_shared<asio::ssl::context>(tls::make_web_server_context(pair));
  acme::enable_tls_alpn_01(ctx->native_handle(), acme_challenges_);
  return ctx;
}

void agent::start_acme(std::size_t index) {
  auto& s = services_[index];
  if (s.acme_running || stopping_) return;
  s.acme_running = true;
  spdlog::info("service {}: asking {} for a certificate for {}", s.config.name,
               s.config.acme_directory, s.host);
  // Posted, never spawned here: co_spawn runs the coroutine at once when called on its own
  // executor's thread, and acme_issue takes mutex_, which our caller holds.
  asio::post(workers_.at(0).get_executor(), [this, index] {
    spawn_logged(workers_.at(0).get_executor(), acme_issue(index), "ACME");
  });
}

asio::awaitable<void> agent::acme_issue(std::size_t index) {
  acme::acme_request r;
  std::string name;
  {
    std::lock_guard lock(mutex_);
    const auto& s = services_[index];
    name = s.config.name;
    r.directory_url = s.config.acme_directory;
    r.ca_file = s.config.acme_ca;
    if (!s.config.acme_email.empty()) r.contact.push_back("mailto:" + s.config.acme_email);
    r.domain = s.host;
  }
  r.cert_key_pem = identity_.key_pem;
  std::string failure;
  try {
    auto key_file = state_dir_ / "acme-account.key";
    if (std::filesystem::exists(key_file)) {
      r.account_key_pem = read_file(key_file);
    } else {
      r.account_key_pem = acme::make_account_key();
      std::filesystem::create_directories(state_dir_);
      write_private_file(key_file, r.account_key_pem);
    }
  } catch (const std::exception& e) {
    failure = std::string("ACME account key: ") + e.what();
  }
  auto store = acme_challenges_;
  r.install_challenge = [store](std::string domain, tls::key_pair cert) {
    store->put(domain, std::move(cert));
  };
  r.remove_challenge = [store](std::string domain) { store->remove(domain); };
  acme::acme_result result;
  if (failure.empty()) {
    auto obtaining = acme::obtain_certificate(std::move(r));
    result = co_await std::move(obtaining);
    failure = result.error;
  }
  std::shared_ptr<asio::ssl::context> ctx;
  share_cert got;
  if (failure.empty()) {
    try {
      ctx = acme_context({result.chain_pem, identity_.key_pem});
      got.not_after = tls::not_after(result.chain_pem);
      auto left = got.not_after - std::chrono::system_clock::now();
      got.renew_at = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(left * 2 / 3);
    } catch (const std::exception& e) {
      failure = std::string("the ACME certificate: ") + e.what();
    }
  }
  std::lock_guard lock(mutex_);
  auto& s = services_[index];
  s.acme_running = false;
  if (!failure.empty()) {
    s.acme_retry_at = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    spdlog::error("service {}: no certificate from the ACME CA: {}; trying again in 30s", name,
                  failure);
    co_return;
  }
  bool renewed = s.acme_cert;
  s.web_tls = std::move(ctx);
  s.acme_cert = true;
  s.renew_at = got.renew_at;
  spdlog::info("service {}: {} certificate for {} from the ACME CA, renewed in {}s", name,
               renewed ? "renewed the" : "got a", s.host,
               std::chrono::duration_cast<std::chrono::seconds>(got.renew_at -
                                                                std::chrono::steady_clock::now())
                   .count());
  announce_share_url(s);
}

asio::awaitable<void> agent::local_session(std::shared_ptr<link::link> l,
                                           std::shared_ptr<link::stream> s,
                                           proto::open_metadata meta, std::size_t index) {
  ++active_streams_;
  struct done {
    std::atomic<std::size_t>& n;
    ~done() { --n; }
  } guard{active_streams_};
  const service_config& svc = services_[index].config;  // immutable after construction
  if (svc.kind == proto::tunnel_kind::share_blind ||
      svc.kind == proto::tunnel_kind::share_inspect) {
    auto serving = web_session(std::move(l), std::move(s), std::move(meta), index);
    co_await std::move(serving);
    co_return;
  }
  if (svc.kind == proto::tunnel_kind::share_passthrough)  // passthrough: each visitor connection
                                                          // counts as activity for expiry
    services_[index].last_request->store(
        std::chrono::steady_clock::now().time_since_epoch().count());
  // A stream keyed from a session is checked before the local service sees a connection.
  std::unique_ptr<link::record_protection> keyed;
  const bool e2ee = svc.kind == proto::tunnel_kind::tcp_e2ee;
  if (e2ee && !meta.e2ee_session.empty()) {
    keyed = keyed_stream(*l, *s, meta, index);
    if (!keyed) co_return;
  }
  tcp::socket socket(l->executor());
  auto connected = co_await with_deadline(tcp_connect_one(socket, services_[index].target),
                                          config_.local_connect_timeout);
  if (!connected || *connected) {
    bool refused = connected && *connected == asio::error::connection_refused;
    std::string why = connected ? connected->message() : "connect timed out";
    l->refuse(*s, refused ? proto::stream_status::refused : proto::stream_status::unreachable, why);
    std::lock_guard lock(mutex_);
    auto& limiter = services_[index].local_errors;
    if (limiter.allow()) {
      auto swallowed = limiter.take_suppressed();
      spdlog::warn(
          "local service {} ({}) is not answering: {}; visitors are closed at once until "
          "it is back{}",
          format_host_port(svc.local_host, svc.local_port), svc.name, why,
          swallowed ? fmt::format(" ({} more since the last message)", swallowed) : "");
    }
    co_return;
  }
  if (s->is_reset()) {  // the visitor left while we were connecting
    l->stream_finished(s->id());
    co_return;
  }
  l->accept(*s);
  std::optional<e2ee::secure_stream> tls;
  if (keyed) {
    tls.emplace(s, std::move(keyed));
  } else if (e2ee) {
    tls.emplace(e2ee_tls_->native_handle(), s, e2ee::tls_role::server);
    auto shaking = tls->handshake();
    auto shaken = co_await with_deadline(std::move(shaking), config_.connect_timeout);
    if (!shaken || *shaken) {
      std::unique_lock lock(mutex_);
      if (e2ee_errors_.allow())
        spdlog::warn("service {}: end-to-end handshake with visitor {} failed: {}", svc.name,
                     meta.visitor_address, shaken ? shaken->message() : "timed out");
      tls->abort(proto::stream_status::cancelled);
      l->stream_finished(s->id());
      boost::system::error_code ec;
      socket.set_option(asio::socket_base::linger(true, 0), ec);
      co_return;
    }
  }
  if (svc.proxy != proto::proxy_version::none) {
    auto header = proto::proxy_header(
        svc.proxy, endpoint_or_unspecified(meta.visitor_address, meta.visitor_port),
        endpoint_or_unspecified(meta.relay_address, meta.relay_port));
    auto [ec, n] = co_await asio::async_write(socket, asio::buffer(header),
                                              asio::as_tuple(asio::use_awaitable));
    if (ec) {
      s->reset(proto::stream_status::refused);
      l->stream_finished(s->id());
      co_return;
    }
  }
  if (tls) {
    co_await e2ee::splice(socket, *tls);
    co_return;
  }
  co_await s->pump(socket);
}

asio::awaitable<void> agent::web_session(std::shared_ptr<link::link> l,
                                         std::shared_ptr<link::stream> s, proto::open_metadata meta,
                                         std::size_t index) {
  const service_config& svc = services_[index].config;
  std::shared_ptr<asio::ssl::context> web_tls;
  std::string host;
  {
    std::lock_guard lock(mutex_);
    web_tls = services_[index].web_tls;
    host = services_[index].host;
  }
  // In the clear: plain HTTP the service asked for, or HTTP the relay decrypted (inspect mode).
  using proto::visitor_scheme;
  const bool inspect = svc.kind == proto::tunnel_kind::share_inspect;
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
    auto shaken = co_await with_deadline(std::move(shaking), config_.connect_timeout);
    if (!shaken || *shaken) {
      {
        std::lock_guard lock(mutex_);
        if (e2ee_errors_.allow())
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
      std::lock_guard lock(mutex_);
      waiting_for_acme = !svc.acme_directory.empty() && !services_[index].acme_cert;
    }
    if (waiting_for_acme) {
      auto answering = http::answer_and_close(
          *visitor, http::simple_response(503, "Service Unavailable",
                                          "the share URL's certificate is not here yet\n"));
      co_await with_deadline(std::move(answering), config_.connect_timeout);
      s->finish();
      co_return;
    }
  }
  tcp::socket socket(l->executor());
  auto connected = co_await with_deadline(tcp_connect_one(socket, services_[index].target),
                                          config_.local_connect_timeout);
  if (!connected || *connected) {
    std::string why = connected ? connected->message() : "connect timed out";
    {
      std::lock_guard lock(mutex_);
      if (services_[index].local_errors.allow())
        spdlog::warn("local service {} ({}) is not answering: {}",
                     format_host_port(svc.local_host, svc.local_port), svc.name, why);
    }
    auto answering = http::answer_and_close(
        *visitor,
        http::simple_response(502, "Bad Gateway", "the tunnel's local service is not answering\n"));
    co_await with_deadline(std::move(answering), config_.connect_timeout);
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
    options.screen = [this, rules = svc.rules, host, visitor_ip,
                      name = svc.name](const http::request_head& head) -> std::string {
      auto verdict = rules->check(head, visitor_ip);
      if (verdict == http::access_rules::verdict::allow) return {};
      std::lock_guard lock(mutex_);
      if (refusals_.allow())
        spdlog::info("service {}: refused visitor {}: {}", name, visitor_ip.to_string(),
                     http::describe(verdict));
      return http::refusal_response(verdict, host);
    };
  }
  options.on_request = [last = services_[index].last_request] {
    last->store(std::chrono::steady_clock::now().time_since_epoch().count());
  };
  auto proxying = http::proxy(*visitor, *local, std::move(options));
  auto result = co_await std::move(proxying);
  if (!result.error.empty())
    spdlog::debug("service {}: visitor {}: {}", svc.name, meta.visitor_address, result.error);
  s->finish();
}

asio::awaitable<void> agent::shutdown() {
  if (stopping_.exchange(true)) co_return;
  std::vector<std::shared_ptr<link::link>> links;
  {
    std::lock_guard lock(mutex_);
    for (auto& w : links_)
      if (auto l = w.lock()) links.push_back(std::move(l));
  }
  // Named first: the call's temporaries must not live inside the co_await expression.
  auto drain = link::drain_links(std::move(links), active_streams_, config_.drain_timeout, "agent");
  co_await std::move(drain);
  workers_.stop();
}

}  // namespace burrow::agent
