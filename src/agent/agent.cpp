// Agent: dialling and redialling the relay, registration, and handing streams to services.
#include "agent/agent.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/address.hpp"
#include "core/heap.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "kinds/registry.hpp"
#include "link/drain.hpp"
#include "link/redial.hpp"
#include "link/stream.hpp"
#include "tls/contexts.hpp"

namespace burrow::agent {

namespace asio = boost::asio;

namespace {

// What to do about the relay's refusals, by their codes: ". Pick another --name", ...
std::string refusal_hint(const std::vector<std::string>& codes) {
  auto any = [&](std::initializer_list<std::string_view> of) {
    return std::any_of(codes.begin(), codes.end(), [&](const std::string& c) {
      return std::find(of.begin(), of.end(), c) != of.end();
    });
  };
  if (any({"port_in_use", "port_reserved", "port_unavailable", "port_not_allowed"}))
    return ". Pick another --remote-port, or leave it out to get any free port";
  if (any({"name_in_use", "name_reserved", "bad_name"})) return ". Pick another --name";
  if (any({"too_many_services"}))
    return ". Stop another service of this token, or ask the relay's operator for a token with a "
           "higher --max-services";
  if (any({"not_allowed"}))
    return ". Ask the relay's operator for a token that allows it (burrow relay token add)";
  return "";
}

}  // namespace

agent::agent(agent_config config)
    : config_(std::move(config)),
      session_(hex(sha256(random_token())).substr(0, 32)),
      tls_(tls::make_client_context({"burrow/1"},
                                    tls::trust_for_peer(config_.relay_pin, config_.relay_ca))),
      context_(config_, workers_, stopping_),
      workers_(threads_for_links(config_.links)),
      hangup_(workers_.at(0), SIGHUP) {
  auto hp = parse_host_port(config_.relay, std::uint16_t{7835});
  relay_host_ = hp->host;
  relay_port_ = std::to_string(hp->port);
  for (auto& svc : config_.services)
    services_.push_back({kinds::entry_for(svc.kind).make_agent_service(context_, svc)});
}

agent::~agent() = default;

int agent::run() {
  log_link_plan(config_.links, workers_.size(), config_.relay);
  for (unsigned i = 0; i < config_.links; ++i)
    spawn_logged(workers_.at(i % workers_.size()).get_executor(), link_slot(i),
                 "link " + std::to_string(i));
  spawn_logged(workers_.at(0).get_executor(), upkeep(), "service upkeep");
  spawn_logged(workers_.at(0).get_executor(), ignore_hangups(), "SIGHUP");
  spawn_logged(workers_.at(0).get_executor(), trim_heap_periodically(stopping_), "heap trim");
  workers_.run([this] { spawn_logged(workers_.at(0).get_executor(), shutdown(), "shutdown"); });
  return exit_code_;
}

asio::awaitable<void> agent::ignore_hangups() {
  while (!stopping_) {
    auto [ec, sig] = co_await hangup_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    spdlog::warn(
        "received SIGHUP; ignored: the agent does not reload its configuration, "
        "restart it to apply changes (SIGINT or SIGTERM stop it)");
  }
}

void agent::fatal(int code, const std::string& message) {
  if (stopping_.exchange(true)) return;
  spdlog::error("{}", message);
  exit_code_ = code;
  workers_.stop();
}

agent::service_entry* agent::find(std::string_view name) {
  for (auto& e : services_)
    if (e.served->name() == name) return &e;
  return nullptr;
}

proto::register_services agent::registration() {
  std::lock_guard lock(context_.mutex);
  proto::register_services r;
  for (auto& e : services_)
    if (!e.replaced)
      if (auto spec = e.served->registration()) r.services.push_back(std::move(*spec));
  return r;
}

void agent::on_replaced(const proto::replaced& r) {
  std::lock_guard lock(context_.mutex);
  for (auto& name : r.names) {
    service_entry* e = find(name);
    if (!e || e->replaced) continue;
    e->replaced = true;
    spdlog::error(
        "service {}: taken over by a newer agent with the same token (session {}); "
        "this agent no longer serves it",
        name, r.by);
  }
  bool all = std::all_of(services_.begin(), services_.end(),
                         [](const service_entry& e) { return e.replaced; });
  if (all)
    asio::post(workers_.at(0).get_executor(), [this] {
      fatal(exit_config,
            "every service of this agent was taken over by a newer agent with the same token; "
            "stopping (run one agent per service, or give each its own --name)");
    });
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
    std::lock_guard lock(context_.mutex);
    context_.links.push_back(l);
  }
  link::link* raw = l.get();
  link::link::handlers h;
  h.on_control = [this, raw](proto::control_message m) {
    if (auto* r = std::get_if<proto::registered>(&m))
      on_registered(*raw, *r);
    else if (auto* c = std::get_if<proto::certificate>(&m))
      on_certificate(*c);
    else if (auto* taken = std::get_if<proto::replaced>(&m))
      on_replaced(*taken);
    else if (auto* e = std::get_if<proto::link_error>(&m))
      spdlog::error("relay: {} ({})", e->message, e->code);
  };
  h.on_open = [this, raw](std::shared_ptr<link::stream> s, proto::open_metadata meta) {
    on_open(*raw, std::move(s), std::move(meta));
  };
  h.on_go_away = [index] {
    spdlog::info("link {}: the relay is going away; will reconnect", index);
  };
  l->send_control(registration());
  co_return co_await l->run(std::move(h));
}

void agent::on_open(link::link& l, std::shared_ptr<link::stream> s, proto::open_metadata meta) {
  service_entry* found = find(meta.service);
  bool expired = false;
  if (found) {
    std::lock_guard lock(context_.mutex);
    expired = found->served->expired() || found->replaced;
  }
  if (!found || expired) {
    l.refuse(*s, proto::stream_status::no_service, "no such service on this agent");
    return;
  }
  // Frames of a sealed stream come from outside the link's TLS: only a stream whose bytes
  // this side authenticates (its end-to-end TLS, a share URL's TLS) may be one.
  service& svc = *found->served;
  if (s->sealed() && !svc.accepts_sealed(meta)) {
    spdlog::warn("service {}: the relay opened a sealed stream for bytes in the clear; refused",
                 svc.name());
    l.refuse(*s, proto::stream_status::protocol_error, "a sealed stream for this service");
    return;
  }
  spawn_logged(l.executor(), svc.serve(l.shared_from_this(), std::move(s), std::move(meta)),
               "stream");
}

void agent::on_registered(link::link& l, const proto::registered& r) {
  std::lock_guard lock(context_.mutex);
  proto::register_services retry;
  std::vector<std::string> refusal_codes;
  bool any_ok = false;
  for (auto& res : r.services) {
    service_entry* e = find(res.name);
    if (!e) continue;
    if (res.ok) {
      any_ok = true;
      e->refusal_logged = false;
      e->served->on_accepted(l, res);
      continue;
    }
    if (auto again = e->served->on_refused(res)) {
      retry.services.push_back(std::move(*again));
      continue;
    }
    if (!e->refusal_logged) {
      spdlog::error("the relay refused service {}{}: {} ({})", res.name,
                    res.remote_port ? " (remote port " + std::to_string(res.remote_port) + ")"
                                    : std::string(),
                    res.message, res.code);
      e->refusal_logged = true;
    }
    refusal_codes.push_back(res.code);
  }
  if (!retry.services.empty()) l.send_control(retry);
  if (any_ok) ever_registered_ = true;
  bool all_refused = !any_ok && retry.services.empty() && r.services.size() == services_.size();
  if (all_refused && !ever_registered_) {
    asio::post(workers_.at(0).get_executor(), [this, hint = refusal_hint(refusal_codes)] {
      fatal(exit_config, "the relay refused every service; nothing to do" + hint);
    });
  }
}

void agent::on_certificate(const proto::certificate& c) {
  std::lock_guard lock(context_.mutex);
  if (service_entry* e = find(c.name)) e->served->on_certificate(c);
}

asio::awaitable<void> agent::upkeep() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping_) {
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    std::lock_guard lock(context_.mutex);
    auto now = std::chrono::steady_clock::now();
    for (auto& e : services_) {
      if (e.served->expired() || e.replaced) continue;
      e.served->upkeep(now);
      if (e.served->expired()) release(*e.served);
    }
  }
}

// Called with the mutex held, for a service that has just expired.
void agent::release(const service& s) {
  context_.send_to_every_link(proto::unregister{{s.name()}});
  bool all_gone = std::all_of(services_.begin(), services_.end(),
                              [](const service_entry& e) { return e.served->expired(); });
  if (all_gone) {
    asio::post(workers_.at(0).get_executor(), [this] {
      spdlog::info("every service has expired; the agent stops");
      spawn_logged(workers_.at(0).get_executor(), shutdown(), "shutdown");
    });
  }
}

asio::awaitable<void> agent::shutdown() {
  if (stopping_.exchange(true)) co_return;
  std::vector<std::shared_ptr<link::link>> links;
  {
    std::lock_guard lock(context_.mutex);
    for (auto& w : context_.links)
      if (auto l = w.lock()) links.push_back(std::move(l));
  }
  // Named first: the call's temporaries must not live inside the co_await expression.
  auto drain =
      link::drain_links(std::move(links), context_.active_streams, config_.drain_timeout, "agent");
  co_await std::move(drain);
  workers_.stop();
}

}  // namespace burrow::agent
