// The agent's end of end-to-end session keys (docs/protocol.md, section 6c): a session stream
// runs one TLS handshake with `burrow connect` and holds the session while it stays open; each
// stream that names the session is keyed from it, once per stream number.
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/deadline.hpp"
#include "core/duration.hpp"
#include "e2ee/secure_stream.hpp"
#include "kinds/tcp_e2ee/agent_side.hpp"
#include "link/link.hpp"
#include "link/stream.hpp"

namespace burrow::kinds::tcp_e2ee {

namespace asio = boost::asio;

asio::awaitable<void> agent_side::session_stream(std::shared_ptr<link::link> l,
                                                 std::shared_ptr<link::stream> s,
                                                 proto::open_metadata meta) {
  const agent::service_config& svc = config_;
  l->accept(*s);
  e2ee::secure_stream tls(identity_.e2ee_tls.native_handle(), s, e2ee::tls_role::server,
                          e2ee::alpn_session);
  auto fail = [&](proto::stream_status why, const std::string& what) {
    {
      std::lock_guard lock(ctx_.mutex);
      if (ctx_.tls_failures.allow())
        spdlog::warn("service {}: end-to-end session with visitor {}: {}", svc.name,
                     meta.visitor_address, what);
    }
    tls.abort(why);
    l->stream_finished(s->id());
  };
  auto shaking = tls.handshake();
  auto shaken = co_await with_deadline(std::move(shaking), ctx_.config.connect_timeout);
  if (!shaken || *shaken) {
    fail(proto::stream_status::cancelled,
         "handshake failed: " + (shaken ? shaken->message() : std::string("timed out")));
    co_return;
  }
  std::shared_ptr<const e2ee::session_keys> keys;
  try {
    keys = e2ee::session_keys::from_session(tls.native_handle());
  } catch (const std::exception& e) {
    fail(proto::stream_status::protocol_error, e.what());
    co_return;
  }
  if (!ctx_.e2ee_sessions.add(keys, session_owner_)) {
    fail(proto::stream_status::overloaded, "too many end-to-end sessions open");
    co_return;
  }
  const std::string id = keys->id();
  keys.reset();  // the registry holds the session's keys from here on; this stream its id
  spdlog::debug("service {}: end-to-end session {} with visitor {} opened", svc.name,
                id.substr(0, 8), meta.visitor_address);
  // One byte says the session is registered: connect names it on other links only after this.
  boost::system::error_code ec;
  const std::uint8_t ready = 1;
  auto writing = tls.write_all(asio::buffer(&ready, 1), ec);
  co_await std::move(writing);
  // The session lasts until connect closes the stream, the link goes, or the agent stops. At its
  // max age the agent forgets it, and its secret with it, even if connect keeps the stream open:
  // streams that name it are refused from then on, and connect makes a new session.
  asio::steady_timer expiry(co_await asio::this_coro::executor, ctx_.config.e2ee_session_max_age);
  auto hold = [&]() -> asio::awaitable<void> {
    std::uint8_t extra[16];
    while (!ec) {
      auto reading = tls.read_some(asio::buffer(extra), ec);
      if (co_await std::move(reading) > 0 && !ec)
        ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
    }
    expiry.cancel();
  };
  auto expire = [&]() -> asio::awaitable<void> {
    auto [waited] = co_await expiry.async_wait(asio::as_tuple(asio::use_awaitable));
    if (waited) co_return;  // the stream ended first
    ctx_.e2ee_sessions.remove(id);
    spdlog::debug("service {}: end-to-end session {} reached its max age ({}) and is forgotten",
                  svc.name, id.substr(0, 8), format_duration(ctx_.config.e2ee_session_max_age));
  };
  {
    using namespace asio::experimental::awaitable_operators;
    co_await (hold() && expire());
  }
  ctx_.e2ee_sessions.remove(id);
  spdlog::debug("service {}: end-to-end session {} closed ({})", svc.name, id.substr(0, 8),
                ec.message());
  if (ec == asio::error::eof) {  // connect closed it: close ours too
    boost::system::error_code ignored;
    auto closing = tls.shutdown_send(ignored);
    co_await std::move(closing);
  }
  s->finish();  // a reset unless both sides closed
}

std::unique_ptr<link::record_protection> agent_side::keyed_stream(
    link::link& l, link::stream& s, const proto::open_metadata& meta) {
  using verdict = e2ee::session_registry::verdict;
  const agent::service_config& svc = config_;
  if (!e2ee::valid_session_id(meta.e2ee_session) || meta.e2ee_stream == 0) {
    l.refuse(s, proto::stream_status::protocol_error, "not an end-to-end session and stream");
    return nullptr;
  }
  auto found = ctx_.e2ee_sessions.take(meta.e2ee_session, meta.e2ee_stream, session_owner_);
  if (found.outcome == verdict::replayed) {
    // connect numbers its streams once each: a number seen again is a replay, or an old stream.
    {
      std::lock_guard lock(ctx_.mutex);
      if (ctx_.tls_failures.allow())
        spdlog::warn(
            "service {}: end-to-end stream {} of session {} from visitor {} was used before "
            "(a replay?); refused",
            svc.name, meta.e2ee_stream, meta.e2ee_session.substr(0, 8), meta.visitor_address);
    }
    l.refuse(s, proto::stream_status::forbidden, "this end-to-end stream number was used before");
    return nullptr;
  }
  if (found.outcome != verdict::ok) {
    // After this agent restarted, or once the session is too old: connect makes a new one.
    l.refuse(s, proto::stream_status::no_service,
             found.outcome == verdict::expired ? "the end-to-end session has expired"
                                               : "no such end-to-end session");
    return nullptr;
  }
  try {
    return found.keys->stream(meta.e2ee_stream, false);
  } catch (const std::exception& e) {
    spdlog::error("service {}: end-to-end stream keys: {}", svc.name, e.what());
    l.refuse(s, proto::stream_status::internal_error, "cannot derive the stream's keys");
    return nullptr;
  }
}

}  // namespace burrow::kinds::tcp_e2ee
