// The relay's side of token scopes: checking each claim against its token, reloading tokens and
// configuration (file changes and SIGHUP), and acting on a revoked or narrowed token.
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "relay/relay.hpp"
#include "relay/token_file.hpp"

namespace burrow::relay {

namespace asio = boost::asio;

void relay::reload_tokens(bool force) {
  auto changes = tokens_.reload(force);
  if (changes.removed.empty() && changes.rescoped.empty()) return;
  std::vector<std::shared_ptr<link::link>> closing;
  {
    std::lock_guard claims(claims_mutex_);
    for (auto& grant : changes.removed) {
      const auto& id = grant->id();
      auto links = grant->links();
      auto ports =
          registry_->release_if([&](std::uint16_t, const owner_id& o) { return o.token_id == id; });
      auto names = names_.release_if(
          [&](const std::string&, const owner_id& o) { return o.token_id == id; });
      spdlog::warn("token {} ({}) revoked: closing its {} link(s); released ports [{}] names [{}]",
                   id, grant->label(), links.size(), joined(ports), joined(names));
      closing.insert(closing.end(), links.begin(), links.end());
    }
    for (auto& id : changes.rescoped) {
      auto scope = tokens_.scope(id);
      if (!scope) continue;
      auto ports = registry_->release_if([&](std::uint16_t port, const owner_id& o) {
        return o.token_id == id && !scope->allows_port(port);
      });
      auto names = names_.release_if([&](const std::string& name, const owner_id& o) {
        return o.token_id == id && !scope->allows_name(name);
      });
      if (!ports.empty() || !names.empty())
        spdlog::warn("token {}: scope narrowed; released ports [{}] names [{}]", id, joined(ports),
                     joined(names));
    }
  }
  // Closed on their own threads, after the lock: a closing link detaches from the registries.
  for (auto& l : closing) asio::post(l->executor(), [l] { l->close("its token was revoked"); });
}

void relay::reload(const relay_config& c) {
  std::lock_guard lock(reload_mutex_);
  handshake_timeout_ = c.handshake_timeout;
  drain_timeout_ = c.drain_timeout;
  share_cert_lifetime_ = c.share_cert_lifetime;
  registry_->set_grace(c.grace);
  names_.set_grace(c.grace);
  if (c.limits.stream_idle_timeout != stream_idle_timeout_.load()) {
    stream_idle_timeout_ = c.limits.stream_idle_timeout;
    std::lock_guard links(links_mutex_);
    for (auto& w : links_)
      if (auto l = w.lock())
        asio::post(l->executor(),
                   [l, t = c.limits.stream_idle_timeout] { l->set_stream_idle_timeout(t); });
  }
  tokens_.set_path(c.tokens_file);
  sources_.configure(c.source);  // open connections stay counted under the new limits
  if (c.tcp_keepalive != tcp_keepalive_.exchange(c.tcp_keepalive))
    keep_listeners_alive(c.tcp_keepalive);
  const auto& was = loaded_;
  auto restart = [](const char* what) {
    spdlog::warn("configuration: {} changed; that needs a restart of the relay", what);
  };
  if (c.listen != was.listen) restart("listen");
  if (c.public_bind != was.public_bind) restart("public-bind");
  if (c.ports.first != was.ports.first || c.ports.last != was.ports.last) restart("port-range");
  if (c.advertise != was.advertise) restart("advertise");
  if (c.domain != was.domain) restart("domain");
  if (c.https_listen != was.https_listen) restart("https-listen");
  if (c.http_listen != was.http_listen) restart("http-listen");
  if (c.workers != was.workers) restart("workers");
  if (c.metrics_listen != was.metrics_listen) restart("metrics-listen");
  if (c.link_encryption != was.link_encryption) restart("link-encryption");
  if (c.state_dir != was.state_dir) restart("state-dir");
  if (c.limits.ping_interval != was.limits.ping_interval ||
      c.limits.ping_timeout != was.limits.ping_timeout ||
      c.limits.max_streams != was.limits.max_streams ||
      c.limits.initial_window != was.limits.initial_window)
    restart("a link limit (ping, max-streams or window)");
  loaded_ = c;
  spdlog::info("configuration reloaded (tokens from {})", c.tokens_file.string());
}

void relay::on_hangup() {
  spdlog::info("received SIGHUP; reloading the configuration and tokens");
  if (config_source_) {
    try {
      reload(config_source_());
    } catch (const std::exception& e) {
      spdlog::error("configuration not reloaded; the relay keeps the one it has: {}", e.what());
    }
  }
  reload_tokens(true);
}

void relay::wait_hangup() {
  hangup_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec || stopping_) return;
    on_hangup();
    wait_hangup();
  });
}

}  // namespace burrow::relay
