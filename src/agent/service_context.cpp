// The agent's shared pieces: its identity, local connections, and the links.
#include "agent/service_context.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/deadline.hpp"
#include "core/drained.hpp"
#include "core/settings.hpp"
#include "e2ee/contexts.hpp"
#include "e2ee/identity.hpp"
#include "link/link.hpp"
#include "link/reregister.hpp"

namespace burrow::agent {

namespace asio = boost::asio;
using asio::ip::tcp;

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

}  // namespace

service_context::service_context(const agent_config& c, workers& threads,
                                 const std::atomic<bool>& stopping)
    : config(c),
      e2ee_sessions(e2ee::session_registry::default_max_sessions, c.e2ee_session_max_age),
      workers_(threads),
      stopping_(stopping) {}

std::filesystem::path service_context::state_dir() const {
  return config.state_dir.empty() ? e2ee::default_agent_state_dir() : config.state_dir;
}

agent_identity& service_context::identity() {
  if (identity_) return *identity_;
  auto dir = state_dir();
  tls::key_pair key;
  try {
    key = config.e2ee_cert.empty() ? e2ee::load_or_create_identity(dir)
                                   : e2ee::load_identity_files(config.e2ee_cert, config.e2ee_key);
  } catch (const std::exception& e) {
    throw config_error(std::string("end-to-end identity: ") + e.what());
  }
  auto fingerprint = tls::fingerprint_sha256(key.cert_pem);
  auto server = e2ee::make_server_context(key);
  identity_.emplace(agent_identity{dir, std::move(key), std::move(fingerprint), std::move(server)});
  return *identity_;
}

service_config service_context::named_for_this_agent(service_config c) {
  if (!c.name_given)
    c.name += "-" + identity().fingerprint.substr(std::string("sha256:").size(), 8);
  return c;
}

tcp::endpoint service_context::resolve_local(const service_config& c) const {
  asio::io_context resolver_context;
  tcp::resolver resolver(resolver_context);
  boost::system::error_code ec;
  auto results = resolver.resolve(c.local_host, std::to_string(c.local_port), ec);
  if (ec || results.empty())
    throw config_error("cannot resolve local address " + c.local_host + ": " + ec.message());
  return results.begin()->endpoint();
}

asio::awaitable<std::optional<boost::system::error_code>> service_context::connect_local(
    tcp::socket& socket, tcp::endpoint target) {
  co_return co_await with_deadline(tcp_connect_one(socket, target), config.local_connect_timeout);
}

std::shared_ptr<link::link> service_context::first_live_link() {
  for (auto& w : links)
    if (auto l = w.lock()) return l;
  return nullptr;
}

void service_context::send_to_every_link(const proto::control_message& m) {
  for (auto& w : links)
    if (auto l = w.lock()) asio::post(l->executor(), [l, m] { l->send_control(m); });
}

asio::any_io_executor service_context::first_executor() {
  return workers_.at(0).get_executor();
}

}  // namespace burrow::agent
