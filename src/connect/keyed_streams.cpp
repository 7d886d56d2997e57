// `burrow connect`'s end of end-to-end session keys (docs/protocol.md, section 6c): one TLS
// handshake with the agent makes a session, and each new local connection's stream is keyed from
// it by number, so a burst of visitors costs key derivations instead of a handshake each.
#include <spdlog/spdlog.h>

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "connect/connector.hpp"
#include "core/deadline.hpp"
#include "core/duration.hpp"
#include "core/spawn.hpp"
#include "e2ee/secure_stream.hpp"
#include "link/stream.hpp"
#include "tls/contexts.hpp"

namespace burrow::connect {

namespace asio = boost::asio;

namespace {

// New connections use a session for at most this long; the agent refuses one after two hours.
// A session's secret keys every stream it opens, so its age bounds what one stolen secret reveals.
constexpr std::chrono::minutes session_max_age{60};
// How long a replaced session stays open for connections already on their way to the agent.
constexpr std::chrono::seconds retire_grace{30};
// After a failed session, connections run their own handshakes this long before the next try.
constexpr std::chrono::seconds session_retry{60};
// After the relay refused the session stream (no agent just now): the next try comes this soon.
constexpr std::chrono::seconds session_retry_refused{1};

}  // namespace

asio::awaitable<std::shared_ptr<connector::live_session>> connector::usable_session(
    std::shared_ptr<link::link> l) {
  const auto deadline = std::chrono::steady_clock::now() + config_.connect_timeout;
  std::shared_ptr<asio::steady_timer> timer;  // made the first time this connection must wait
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    std::shared_ptr<live_session> old;
    bool start = false;
    {
      std::lock_guard lock(mutex_);
      if (session_now_ && !session_now_->dead && now - session_now_->born < session_max_age)
        co_return session_now_;
      old = std::move(session_now_);
      if (now < sessions_retry_at_) co_return nullptr;
      if (!session_opening_) session_opening_ = start = true;
      // Registered with the check, under the lock: the wake-up cannot come between the two. It is
      // posted to this executor, so it runs once the wait below has begun.
      if (timer && now < deadline) session_waiters_.push_back({timer->get_executor(), timer});
    }
    if (old) retire(std::move(old), retire_grace);
    if (start) spawn_logged(l->executor(), run_session(l), "end-to-end session");
    if (now >= deadline) break;
    if (!timer) {  // then look again, registered this time
      timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
      continue;
    }
    // While the session is made (one handshake, a few milliseconds unless the agent is slow to
    // answer): woken when it is settled, or at the deadline.
    timer->expires_at(deadline);
    co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return nullptr;
}

asio::awaitable<void> connector::run_session(std::shared_ptr<link::link> l) {
  auto live = std::make_shared<live_session>();
  auto settle = [&](bool made, std::chrono::steady_clock::duration retry) {
    std::lock_guard lock(mutex_);
    session_opening_ = false;
    if (made)
      session_now_ = live;
    else
      sessions_retry_at_ = std::chrono::steady_clock::now() + retry;
    for (auto& w : session_waiters_)
      asio::post(w.executor, [t = std::move(w.timer)] {
        if (auto timer = t.lock()) timer->cancel();
      });
    session_waiters_.clear();
  };
  proto::open_metadata meta;
  meta.service = config_.service;
  meta.visitor_token = config_.visitor_token;
  meta.sealed = true;
  meta.e2ee_session = std::string(e2ee::new_session);
  auto s = l->open_stream(meta);
  if (!s) {  // this link is full: the next connection tries again, maybe on another
    settle(false, {});
    co_return;
  }
  auto tls = std::make_unique<e2ee::secure_stream>(e2ee_session_tls_.native_handle(), s,
                                                   e2ee::tls_role::client, e2ee::alpn_session);
  sessions_.prepare(tls->native_handle(), config_.service + " " + config_.pin);
  tls::verification_outcome outcome;
  tls::apply_peer_verification(tls->native_handle(), {config_.pin, "", ""}, &outcome);
  std::string failure;
  bool refused = false;  // by the relay, before the agent had it: not the agent's answer
  auto shaking = tls->handshake();
  auto shaken = co_await with_deadline(std::move(shaking), config_.connect_timeout);
  if (!shaken || *shaken) {
    refused = s->is_reset() && !s->open_confirmed();
    failure =
        refused ? "the relay refused it (" + std::string(proto::to_string(s->reset_status())) + ")"
                : (shaken ? shaken->message() : std::string("timed out"));
  } else {
    try {
      live->keys = e2ee::session_keys::from_session(tls->native_handle());
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  if (failure.empty()) {  // the agent says when it holds the session
    std::uint8_t ready = 0;
    boost::system::error_code ec;
    auto reading = tls->read_some(asio::buffer(&ready, 1), ec);
    auto got = co_await with_deadline(std::move(reading), config_.connect_timeout);
    if (!got || ec || *got != 1 || ready != 1)
      failure = "the agent did not confirm it (" + (got ? ec.message() : "timed out") + ")";
  }
  if (!failure.empty()) {
    // An agent from before session keys refuses the session's ALPN: connections run their own
    // handshakes a while. A refusal by the relay (the agent is away, restarting) would refuse
    // those too: the next connection asks again soon. A pin that does not match is reported by
    // the connection's own handshake, which runs next.
    const std::chrono::milliseconds retry = refused ? session_retry_refused : session_retry;
    {
      std::lock_guard lock(mutex_);
      if (session_log_.allow())
        spdlog::info(
            "no end-to-end session with {}: {}; connections run their own TLS handshakes for "
            "the next {}",
            config_.service, outcome.pin_mismatch ? "the pin does not match" : failure,
            format_duration(retry));
    }
    tls->abort(proto::stream_status::cancelled);
    l->stream_finished(s->id());
    settle(false, retry);
    co_return;
  }
  live->born = std::chrono::steady_clock::now();
  live->executor = l->executor();
  live->control = tls.get();
  settle(true, {});
  spdlog::debug("end-to-end session {} with {} open", live->keys->id().substr(0, 8),
                config_.service);
  // Held until connect retires it or the agent or the link ends it: nothing more comes on it.
  // Retired at its age even when no new connection comes to find it old, so an idle connect
  // does not keep the secret past the hour and the grace.
  boost::system::error_code ec;
  asio::steady_timer aging(co_await asio::this_coro::executor, session_max_age);
  auto hold = [&]() -> asio::awaitable<void> {
    std::uint8_t extra = 0;
    while (!ec) {
      auto reading = tls->read_some(asio::buffer(&extra, 1), ec);
      if (co_await std::move(reading) > 0 && !ec)
        ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
    }
    aging.cancel();
  };
  auto age = [&]() -> asio::awaitable<void> {
    auto [waited] = co_await aging.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!waited) retire(live, retire_grace);  // its stream's end, after the grace, ends `hold`
  };
  {
    using namespace asio::experimental::awaitable_operators;
    co_await (hold() && age());
  }
  live->control = nullptr;
  live->dead = true;
  {
    std::lock_guard lock(mutex_);
    if (session_now_ == live) session_now_.reset();
  }
  spdlog::debug("end-to-end session {} with {} closed ({})", live->keys->id().substr(0, 8),
                config_.service, ec.message());
  if (ec == asio::error::eof) {  // the agent closed it, or answered our close: close our side
    boost::system::error_code ignored;
    auto closing = tls->shutdown_send(ignored);
    co_await std::move(closing);
  }
  s->finish();  // a reset unless both sides closed
}

void connector::retire(std::shared_ptr<live_session> live, std::chrono::milliseconds grace) {
  if (live->dead.exchange(true)) return;  // retired already, or its stream has ended
  auto ex = live->executor;
  if (!ex) return;
  auto closing = [](std::shared_ptr<live_session> live,
                    std::chrono::milliseconds grace) -> asio::awaitable<void> {
    asio::steady_timer timer(co_await asio::this_coro::executor, grace);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!live->control) co_return;  // the agent or the link ended it first
    boost::system::error_code ec;
    co_await live->control->shutdown_send(ec);  // the agent answers with its own close
  };
  spawn_logged(ex, closing(std::move(live), grace), "end-to-end session close");
}

asio::awaitable<std::unique_ptr<e2ee::secure_stream>> connector::open_keyed(
    std::shared_ptr<link::link> l, std::shared_ptr<live_session> live, bool& full) {
  const std::uint64_t number = live->next.fetch_add(1);
  std::unique_ptr<link::record_protection> keys;
  try {
    keys = live->keys->stream(number, true);
  } catch (const std::exception& e) {
    spdlog::error("end-to-end stream keys: {}", e.what());
    co_return nullptr;
  }
  proto::open_metadata meta;
  meta.service = config_.service;
  meta.visitor_token = config_.visitor_token;
  meta.sealed = true;
  meta.e2ee_session = live->keys->id();
  meta.e2ee_stream = number;
  auto s = l->open_stream(meta);
  if (!s) {
    full = true;
    co_return nullptr;
  }
  // Nothing goes out under the stream's keys before the agent has taken them: a refusal (a
  // restarted agent has no such session) leaves the connection free for a handshake instead.
  auto waiting = s->wait_open_result();
  auto status = co_await with_deadline(std::move(waiting), config_.connect_timeout);
  if (status && *status == proto::stream_status::ok)
    co_return std::make_unique<e2ee::secure_stream>(s, std::move(keys));
  if (!status) s->reset(proto::stream_status::cancelled);
  l->stream_finished(s->id());
  if (status && (*status == proto::stream_status::overloaded ||
                 *status == proto::stream_status::going_away)) {
    full = true;
    co_return nullptr;
  }
  spdlog::debug("end-to-end stream {} of session {} refused ({}); running a handshake instead",
                number, live->keys->id().substr(0, 8),
                status ? std::string(proto::to_string(*status)) : std::string("timed out"));
  {
    std::lock_guard lock(mutex_);
    if (session_now_ == live) session_now_.reset();
  }
  retire(std::move(live), std::chrono::milliseconds(0));
  co_return nullptr;
}

}  // namespace burrow::connect
