// Blind mode: the certificate the agent presents and its renewal, and the visitors' TLS.
#include "kinds/share_url/blind.hpp"

#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "core/settings.hpp"
#include "kinds/share_url/agent_side.hpp"
#include "kinds/share_url/share_cert.hpp"
#include "link/link.hpp"

namespace burrow::kinds::share_url {

namespace asio = boost::asio;

blind_side::blind_side(agent::service_context& ctx, agent::service_config config)
    : share_url_side(ctx, std::move(config)) {
  if (config_.cert_file.empty()) return;
  try {
    web_tls_ = load_share_cert(config_.cert_file, config_.key_file).tls;
    own_cert_ = true;
  } catch (const std::exception& e) {
    throw config_error(std::string("service ") + config_.name + ": " + e.what());
  }
}

void blind_side::on_accepted(link::link& l, const proto::service_result& r) {
  take_address(r);
  if (!config_.acme_directory.empty()) {
    if (!web_tls_ && !use_saved_acme_chain()) {
      // Until the CA's certificate arrives: a placeholder that answers its validations.
      web_tls_ = acme_context(tls::make_self_signed(host_, {host_}, std::chrono::hours(24)));
    }
    if (!acme_cert_) start_acme();
    if (acme_cert_) announce();
    return;
  }
  maybe_request_cert(l);
  if (web_tls_) announce();
}

// The visitor's own TLS, which ends here.
bool blind_side::accepts_sealed(const proto::open_metadata& meta) const {
  return meta.scheme == proto::visitor_scheme::own_tls;
}

asio::awaitable<void> blind_side::serve(std::shared_ptr<link::link> l,
                                        std::shared_ptr<link::stream> s,
                                        proto::open_metadata meta) {
  auto serving = web_session(std::move(l), std::move(s), std::move(meta), false);
  co_await std::move(serving);
}

void blind_side::upkeep(std::chrono::steady_clock::time_point now) {
  share_url_side::upkeep(now);
  if (expired_) return;
  if (!config_.acme_directory.empty() && !host_.empty() && !acme_running_) {
    bool due = acme_cert_ ? now >= renew_at_ : now >= acme_retry_at_;
    if (due) start_acme();
  }
  auto live = ctx_.first_live_link();
  if (!live || own_cert_ || host_.empty()) return;
  bool due = !web_tls_ || now >= renew_at_;
  bool waiting = requested_at_ != std::chrono::steady_clock::time_point{} &&
                 now - requested_at_ < std::chrono::seconds(10);
  if (!due || waiting) return;
  asio::post(live->executor(), [this, live] {
    std::lock_guard inner(ctx_.mutex);
    maybe_request_cert(*live);
  });
}

std::string blind_side::visitor_note() const {
  if (own_cert_) return {};
  if (acme_cert_)
    return fmt::format("visitors who trust the ACME CA need nothing more: curl {}\n",
                       public_address_);
  auto ca = (identity_.state_dir / "relay-ca.pem").string();
  return fmt::format(
      "visitors trust the relay's CA (`burrow relay ca` prints it; a copy is in {}): curl "
      "--cacert {} {}\n",
      ca, ca, public_address_);
}

std::unique_ptr<agent::service> make_blind_side(agent::service_context& ctx,
                                                agent::service_config config) {
  return std::make_unique<blind_side>(ctx, std::move(config));
}

}  // namespace burrow::kinds::share_url
