// Blind mode: TLS ends at the agent, so the relay never reads the visitors' requests. The
// certificate is the user's own, the relay CA's (relay_ca_cert.cpp) or an ACME CA's
// (acme_cert.cpp).
#pragma once

#include <chrono>
#include <filesystem>

#include "acme/tls_alpn.hpp"
#include "kinds/share_url/share_url.hpp"

namespace burrow::kinds::share_url {

class blind_side final : public share_url_side {
 public:
  blind_side(agent::service_context& ctx, agent::service_config config);

  void on_accepted(link::link& l, const proto::service_result& r) override;
  bool accepts_sealed(const proto::open_metadata& meta) const override;
  boost::asio::awaitable<void> serve(std::shared_ptr<link::link> l, std::shared_ptr<link::stream> s,
                                     proto::open_metadata meta) override;
  void on_certificate(const proto::certificate& c) override;
  void upkeep(std::chrono::steady_clock::time_point now) override;

 private:
  std::string visitor_note() const override;
  std::shared_ptr<boost::asio::ssl::context> visitor_tls() const override { return web_tls_; }
  bool certificate_pending() const override {
    return !config_.acme_directory.empty() && !acme_cert_;
  }

  // The relay CA's certificate (with the mutex held, on `l`'s thread): asks for one when none is
  // here or it is due for renewal, and no request is waiting for its answer.
  void maybe_request_cert(link::link& l);
  // ACME (with the mutex held): starts an issuance unless one runs.
  void start_acme();
  boost::asio::awaitable<void> acme_issue();
  std::shared_ptr<boost::asio::ssl::context> acme_context(const tls::key_pair& pair);
  // STATE_DIR/acme-HOST.pem: the ACME CA's chain for this agent's key, kept so that a restart
  // does not order another (the CA's duplicate-certificate limits).
  std::filesystem::path acme_chain_file() const;
  // The saved chain, if it is for this key and name and still valid: served, renewed at two
  // thirds of its life. With the mutex held.
  bool use_saved_acme_chain();

  // Guarded by the context's mutex: the TLS visitors meet, and when to ask for the next
  // certificate.
  std::shared_ptr<boost::asio::ssl::context> web_tls_;
  bool own_cert_ = false;  // the user's --cert: never renewed through the relay
  std::chrono::steady_clock::time_point renew_at_ = std::chrono::steady_clock::time_point::max();
  std::chrono::steady_clock::time_point requested_at_{};
  // ACME: an issuance is running; the certificate is the CA's (not the placeholder that only
  // answers validations); when to try again after a failure.
  bool acme_running_ = false;
  bool acme_cert_ = false;
  std::chrono::steady_clock::time_point acme_retry_at_{};
};

}  // namespace burrow::kinds::share_url
