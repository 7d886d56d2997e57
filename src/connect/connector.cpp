// `burrow connect`: link pool, local listener or stdio, and the pinned TLS session per stream.
#include "connect/connector.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>

#include "core/acceptor.hpp"
#include "core/address.hpp"
#include "core/backoff.hpp"
#include "core/deadline.hpp"
#include "core/duration.hpp"
#include "core/heap.hpp"
#include "core/run_on.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "e2ee/secure_stream.hpp"
#include "e2ee/splice.hpp"
#include "link/redial.hpp"
#include "link/stream.hpp"
#include "tls/contexts.hpp"

namespace burrow::connect {

namespace asio = boost::asio;
using asio::ip::tcp;

connector::connector(connect_config config)
    : config_(std::move(config)),
      session_(hex(sha256(random_token())).substr(0, 32)),
      workers_(threads_for_links(config_.links)),
      link_tls_(tls::make_client_context({"burrow/1"},
                                         tls::trust_for_peer(config_.relay_pin, config_.relay_ca))),
      e2ee_tls_(e2ee::make_client_context()),
      sessions_(config_.resume),
      e2ee_session_tls_(e2ee::make_client_context(true)) {
  auto hp = parse_host_port(config_.relay, std::uint16_t{7835});
  dial_ = {config_.relay,
           hp->host,
           std::to_string(hp->port),
           config_.relay_pin,
           config_.relay_ca,
           config_.connect_timeout,
           "",
           config_.link_encryption};
}

connector::~connector() = default;

void connector::bind() {
  if (config_.stdio) return;
  auto hp = parse_host_port(config_.listen, std::nullopt);
  boost::system::error_code ec;
  auto address = asio::ip::make_address(hp ? hp->host : "", ec);
  if (!hp || ec)
    throw std::runtime_error("listen address '" + config_.listen + "' needs an IP address");
  try {
    acceptor_ = make_acceptor(workers_.at(0).get_executor(), tcp::endpoint(address, hp->port));
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("cannot listen on " + config_.listen + ": " + e.code().message());
  }
}

tcp::endpoint connector::local_endpoint() const {
  return acceptor_ ? acceptor_->local_endpoint() : tcp::endpoint();
}

int connector::run() {
  log_link_plan(config_.links, workers_.size(), config_.relay);
  for (unsigned i = 0; i < config_.links; ++i) grow(false);
  auto ex = workers_.at(0).get_executor();
  // A burst of visitors, each with its own TLS session, leaves its memory free in the heaps.
  spawn_logged(ex, trim_heap_periodically(stopping_), "heap trim");
  if (config_.stdio) {
    spawn_logged(ex, stdio_session(), "stdio");
  } else {
    auto ep = local_endpoint();
    std::string line =
        fmt::format("listening on {} for {}", format_host_port(ep.address().to_string(), ep.port()),
                    config_.service);
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
    spdlog::info("{} through relay {}", line, config_.relay);
    spawn_logged(ex, accept_loop(), "listener");
  }
  // Nothing to drain on the visitor's side: open connections end with the process.
  workers_.run([this] { finish(exit_code_); });
  return exit_code_;
}

void connector::finish(int code) {
  exit_code_ = code;
  stopping_ = true;
  boost::system::error_code ec;
  if (acceptor_) acceptor_->close(ec);
  workers_.stop();
}

void connector::fatal(int code, const std::string& message) {
  if (stopping_.exchange(true)) return;
  spdlog::error("{}", message);
  finish(code);
}

bool connector::grow(bool when_full) {
  unsigned index;
  {
    std::lock_guard lock(mutex_);
    if (when_full && growing_ > 0) return true;
    if (slots_ >= config_.max_links) return false;
    index = slots_++;
    if (when_full) {
      ++growing_;
      spdlog::info("every link to the relay is full; opening link {}", index);
    }
  }
  auto ex = workers_.at(index % workers_.size()).get_executor();
  spawn_logged(ex, link_slot(index), "link " + std::to_string(index));
  return true;
}

asio::awaitable<void> connector::link_slot(unsigned index) {
  link::redial_plan plan;
  plan.relay = config_.relay;
  plan.index = index;
  plan.backoff_first = config_.backoff_first;
  plan.backoff_max = config_.backoff_max;
  plan.stopping = &stopping_;
  plan.dial = [this, index] {
    link::dial_options o = dial_;
    o.link_name = "relay " + config_.relay + " link " + std::to_string(index);
    proto::hello hello{{proto::protocol_version}, "visitor", "", session_, index,
                       "burrow/" BURROW_VERSION,  ""};
    return link::dial_relay(std::move(o), link_tls_, std::move(hello));
  };
  plan.serve = [this](std::shared_ptr<link::link> l) { return serve_link(l); };
  plan.fatal = [this](const link::dial_result& r) {
    fatal(r.failure == link::dial_failure::relay_identity ? exit_identity : exit_failed, r.error);
  };
  if (index >= config_.links) {
    plan.first_attempt_done = [this] {
      std::lock_guard lock(mutex_);
      --growing_;
    };
  }
  co_await link::redial(std::move(plan));
}

asio::awaitable<std::string> connector::serve_link(std::shared_ptr<link::link> l) {
  {
    std::lock_guard lock(mutex_);
    links_.push_back({l, ++generation_});
  }
  link::link* raw = l.get();
  link::link::handlers h;
  h.on_control = [](proto::control_message m) {
    if (auto* e = std::get_if<proto::link_error>(&m))
      spdlog::error("relay: {} ({})", e->message, e->code);
  };
  h.on_open = [raw](std::shared_ptr<link::stream> s, proto::open_metadata) {
    raw->refuse(*s, proto::stream_status::forbidden, "visitors accept no streams");
  };
  std::string reason = co_await l->run(std::move(h));
  {
    std::lock_guard lock(mutex_);
    std::erase_if(links_, [&](const pooled& p) { return p.link == l; });
  }
  co_return reason;
}

std::shared_ptr<link::link> connector::pick(link_choice choice) {
  std::lock_guard lock(mutex_);
  for (std::size_t tries = 0; tries < links_.size(); ++tries) {
    auto& p = links_[next_++ % links_.size()];
    if (p.link.get() != choice.avoid && p.generation > choice.after) return p.link;
  }
  return nullptr;
}

asio::awaitable<std::shared_ptr<link::link>> connector::wait_for_link(link_choice choice) {
  // Only while no link is up (starting, or the relay restarting), or while the one that was
  // full is the only one: a short poll is enough.
  auto deadline = std::chrono::steady_clock::now() + config_.connect_timeout;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!stopping_) {
    if (auto l = pick(choice)) co_return l;
    if (std::chrono::steady_clock::now() >= deadline) break;
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return nullptr;
}

asio::awaitable<void> connector::accept_loop() {
  asio::steady_timer pause(acceptor_->get_executor());
  for (;;) {
    auto [ec, socket] = co_await acceptor_->async_accept(asio::as_tuple(asio::use_awaitable));
    if (stopping_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      spdlog::warn("listener: accept failed: {}; retrying in 100ms", ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    spawn_logged(acceptor_->get_executor(), dispatch(std::move(socket), 0, {}), "connection");
  }
}

asio::awaitable<void> connector::dispatch(tcp::socket socket, int attempt, link_choice choice) {
  auto waiting = wait_for_link(choice);
  auto l = co_await std::move(waiting);
  boost::system::error_code ec;
  if (!l) {
    std::lock_guard lock(mutex_);
    if (!stopping_ && refused_log_.allow())
      spdlog::warn("no link to relay {} within {}; local connections are closed until it is back",
                   config_.relay, format_duration(config_.connect_timeout));
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  move_socket(std::move(socket), l->executor(), [this, l, attempt](tcp::socket moved) {
    spawn_logged(l->executor(), session(l, std::move(moved), attempt), "connection");
  });
}

asio::awaitable<void> connector::session(std::shared_ptr<link::link> l, tcp::socket socket,
                                         int attempt) {
  bool full = false;
  auto opening = open_secure(l, full);
  auto tls = co_await std::move(opening);
  boost::system::error_code ec;
  if (!tls) {
    if (full && attempt < 8 && !stopping_) {
      // This link is full or closing: another one takes the connection, and once every link
      // has been tried, a new one (the connection waits for it).
      link_choice next{l.get(), 0};
      bool all_tried;
      {
        std::lock_guard lock(mutex_);
        all_tried = static_cast<std::size_t>(attempt) + 1 >= links_.size();
        if (all_tried) next.after = generation_;
      }
      if (!all_tried || grow()) {
        auto ex = socket.get_executor();
        spawn_logged(ex, dispatch(std::move(socket), attempt + 1, next), "connection");
        co_return;
      }
      std::lock_guard lock(mutex_);
      if (refused_log_.allow())
        spdlog::warn(
            "every link to the relay is full and --max-links {} are open; closing "
            "the connection",
            config_.max_links);
    }
    socket.set_option(asio::socket_base::linger(true, 0), ec);
    co_return;
  }
  co_await e2ee::splice(socket, *tls);
}

asio::awaitable<std::unique_ptr<e2ee::secure_stream>> connector::open_secure(
    std::shared_ptr<link::link> l, bool& full) {
  if (config_.session_keys && !config_.stdio) {  // one connection on stdio: nothing to share
    auto finding = usable_session(l);
    if (auto live = co_await std::move(finding)) {
      auto opening = open_keyed(l, std::move(live), full);
      auto keyed = co_await std::move(opening);
      if (keyed || full) co_return keyed;
    }
  }
  proto::open_metadata meta;
  meta.service = config_.service;
  meta.visitor_token = config_.visitor_token;
  meta.sealed = true;  // our TLS with the agent runs inside it
  auto s = l->open_stream(meta);
  if (!s) {
    full = true;
    co_return nullptr;
  }
  auto tls =
      std::make_unique<e2ee::secure_stream>(e2ee_tls_.native_handle(), s, e2ee::tls_role::client);
  // The pin is part of the key: a session made with one pin never resumes under another.
  sessions_.prepare(tls->native_handle(), config_.service + " " + config_.pin);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(tls->native_handle(), {config_.pin, "", ""}, &outcome);
  // Optimistic: the ClientHello follows the open frame at once, without waiting for the relay's
  // answer, which saves a round trip through relay and agent on every new connection. A refused
  // open resets the stream, and the handshake ends with the refusal.
  auto shaking = tls->handshake();
  auto shaken = co_await with_deadline(std::move(shaking), config_.connect_timeout);
  if (!shaken || *shaken) {
    bool refused = s->is_reset() && !s->open_confirmed();
    auto status = s->reset_status();
    tls->abort(proto::stream_status::cancelled);
    l->stream_finished(s->id());
    if (refused && (status == proto::stream_status::overloaded ||
                    status == proto::stream_status::going_away)) {
      full = true;
      co_return nullptr;
    }
    if (refused) {
      std::string why =
          s->refusal_reason().empty() ? std::string(proto::to_string(status)) : s->refusal_reason();
      std::string message =
          "the relay could not open a connection to " + config_.service + ": " + why;
      if (config_.stdio) {
        fatal(exit_failed, message);
      } else {
        std::lock_guard lock(mutex_);
        if (refused_log_.allow()) spdlog::error("{}", message);
      }
      co_return nullptr;
    }
    if (outcome.pin_mismatch) {
      std::string message =
          "the agent of " + config_.service + " presented certificate " + outcome.seen_fingerprint +
          " but --pin expects " + config_.pin +
          "; nothing was sent. If the agent's key changed on purpose, ask its owner for the new "
          "fingerprint; otherwise the relay or something on the way is impersonating the agent";
      if (config_.stdio) {
        fatal(exit_identity, message);
      } else {
        std::lock_guard lock(mutex_);
        if (handshake_log_.allow()) spdlog::error("{}", message);
      }
      co_return nullptr;
    }
    std::string message = "end-to-end handshake with " + config_.service +
                          " failed: " + (shaken ? shaken->message() : std::string("timed out"));
    if (config_.stdio) {
      fatal(exit_failed, message);
    } else {
      std::lock_guard lock(mutex_);
      if (handshake_log_.allow()) spdlog::warn("{}", message);
    }
    co_return nullptr;
  }
  co_return tls;
}

namespace {

// Standard input and output as one connection: EOF on input half-closes toward the agent; the
// agent's half-close closes output.
asio::awaitable<void> stdin_to_tls(asio::posix::stream_descriptor& in, e2ee::secure_stream& tls,
                                   bool& failed) {
  std::vector<std::uint8_t> buffer(16 * 1024);
  for (;;) {
    auto [ec, n] =
        co_await in.async_read_some(asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
    boost::system::error_code wec;
    if (ec == asio::error::eof) {
      co_await tls.shutdown_send(wec);
      co_return;
    }
    if (ec) {
      spdlog::error("reading standard input: {}", ec.message());
      failed = true;
      tls.abort(proto::stream_status::cancelled);
      co_return;
    }
    co_await tls.write_all(asio::buffer(buffer.data(), n), wec);
    if (wec) co_return;
  }
}

asio::awaitable<void> tls_to_stdout(e2ee::secure_stream& tls, asio::posix::stream_descriptor& out,
                                    asio::posix::stream_descriptor& in, bool& failed) {
  std::vector<std::uint8_t> buffer(16 * 1024);
  for (;;) {
    boost::system::error_code ec;
    auto n = co_await tls.read_some(asio::buffer(buffer), ec);
    if (ec == asio::error::eof) break;
    if (ec) {
      failed = true;
      break;
    }
    auto [wec, written] = co_await asio::async_write(out, asio::buffer(buffer.data(), n),
                                                     asio::as_tuple(asio::use_awaitable));
    if (wec) {
      failed = true;
      tls.abort(proto::stream_status::cancelled);
      break;
    }
  }
  boost::system::error_code ec;
  out.close(ec);
  if (failed) in.cancel(ec);  // the connection is gone: stop waiting for input
}

}  // namespace

asio::awaitable<void> connector::stdio_session() {
  std::unique_ptr<e2ee::secure_stream> tls;
  std::shared_ptr<link::link> l;
  link_choice choice;
  for (int attempt = 0; attempt < 8 && !tls && !stopping_; ++attempt) {
    auto waiting = wait_for_link(choice);
    l = co_await std::move(waiting);
    if (!l) {
      fatal(exit_failed, "could not reach relay " + config_.relay + " within " +
                             format_duration(config_.connect_timeout));
      co_return;
    }
    bool full = false;
    auto opening = run_on(l->executor(), open_secure(l, full));
    tls = co_await std::move(opening);
    if (!tls && !full) co_return;  // open_secure said why and set the exit code
    if (!tls) choice = {l.get(), 0};
    if (!tls && attempt + 1 >= static_cast<int>(config_.links)) {
      std::uint64_t now;
      {
        std::lock_guard lock(mutex_);
        now = generation_;
      }
      if (!grow()) break;
      choice.after = now;
    }
  }
  if (!tls) {
    fatal(exit_failed, "every link to the relay is full");
    co_return;
  }
  auto running = run_on(l->executor(), stdio_splice(std::move(tls)));
  bool ok = co_await std::move(running);
  finish(ok ? exit_ok : exit_failed);
}

asio::awaitable<bool> connector::stdio_splice(std::unique_ptr<e2ee::secure_stream> tls) {
  using namespace asio::experimental::awaitable_operators;
  auto ex = co_await asio::this_coro::executor;
  asio::posix::stream_descriptor in(ex, ::dup(STDIN_FILENO));
  asio::posix::stream_descriptor out(ex, ::dup(STDOUT_FILENO));
  bool failed = false;
  co_await (stdin_to_tls(in, *tls, failed) && tls_to_stdout(*tls, out, in, failed));
  tls->stream().finish();
  co_return !failed;
}

}  // namespace burrow::connect
