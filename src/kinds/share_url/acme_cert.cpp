// Blind mode with `acme`: a certificate from an ACME CA, its TLS-ALPN-01 validations answered by
// this agent through the relay's SNI routing (web_session.cpp); kept in the state directory,
// renewed after two thirds of its life, tried again 30s after a failure.
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <filesystem>

#include "acme/client.hpp"
#include "acme/jws.hpp"
#include "core/secret.hpp"
#include "core/spawn.hpp"
#include "kinds/share_url/blind.hpp"
#include "kinds/share_url/share_cert.hpp"
#include "tls/certs.hpp"
#include "tls/contexts.hpp"

namespace burrow::kinds::share_url {

namespace asio = boost::asio;

std::shared_ptr<asio::ssl::context> blind_side::acme_context(const tls::key_pair& pair) {
  auto ctx = std::make_shared<asio::ssl::context>(tls::make_web_server_context(pair));
  acme::enable_tls_alpn_01(ctx->native_handle(), ctx_.acme_challenges);
  return ctx;
}

namespace {

std::int64_t seconds_until(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t - std::chrono::steady_clock::now())
      .count();
}

}  // namespace

std::filesystem::path blind_side::acme_chain_file() const {
  return identity_.state_dir / ("acme-" + host_ + ".pem");
}

bool blind_side::use_saved_acme_chain() {
  auto file = acme_chain_file();
  std::error_code ec;
  if (host_.empty() || !std::filesystem::exists(file, ec)) return false;
  try {
    auto chain = read_file(file);
    check_share_cert({chain, identity_.key.key_pem}, host_);
    web_tls_ = acme_context({chain, identity_.key.key_pem});
    acme_cert_ = true;
    renew_at_ = renewal_time(chain);
    spdlog::info("service {}: using the certificate for {} saved in {}, renewed in {}s",
                 config_.name, host_, file.string(), seconds_until(renew_at_));
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("service {}: not using {}: {}; ordering a new certificate", config_.name,
                 file.string(), e.what());
    return false;
  }
}

void blind_side::start_acme() {
  if (acme_running_ || ctx_.stopping()) return;
  acme_running_ = true;
  spdlog::info("service {}: asking {} for a certificate for {}", config_.name,
               config_.acme_directory, host_);
  // Posted, never spawned here: co_spawn runs the coroutine at once when called on its own
  // executor's thread, and acme_issue takes the mutex, which our caller holds.
  asio::post(ctx_.first_executor(),
             [this] { spawn_logged(ctx_.first_executor(), acme_issue(), "ACME"); });
}

asio::awaitable<void> blind_side::acme_issue() {
  acme::acme_request r;
  std::string name;
  {
    std::lock_guard lock(ctx_.mutex);
    name = config_.name;
    r.directory_url = config_.acme_directory;
    r.ca_file = config_.acme_ca;
    if (!config_.acme_email.empty()) r.contact.push_back("mailto:" + config_.acme_email);
    r.domain = host_;
  }
  r.cert_key_pem = identity_.key.key_pem;
  std::string failure;
  const auto& state_dir = identity_.state_dir;
  try {
    auto key_file = state_dir / "acme-account.key";
    if (std::filesystem::exists(key_file)) {
      r.account_key_pem = read_file(key_file);
    } else {
      r.account_key_pem = acme::make_account_key();
      std::filesystem::create_directories(state_dir);
      write_private_file(key_file, r.account_key_pem);
    }
  } catch (const std::exception& e) {
    failure = std::string("ACME account key: ") + e.what();
  }
  auto store = ctx_.acme_challenges;
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
  std::chrono::steady_clock::time_point renew_at;
  if (failure.empty()) {
    try {
      ctx = acme_context({result.chain_pem, identity_.key.key_pem});
      renew_at = renewal_time(result.chain_pem, std::chrono::system_clock::now());
    } catch (const std::exception& e) {
      failure = std::string("the ACME certificate: ") + e.what();
    }
  }
  std::lock_guard lock(ctx_.mutex);
  if (failure.empty()) {
    try {
      write_private_file(acme_chain_file(), result.chain_pem);
    } catch (const std::exception& e) {
      spdlog::warn("service {}: cannot save the certificate in {}: {}; a restart orders another",
                   name, acme_chain_file().string(), e.what());
    }
  }
  acme_running_ = false;
  if (!failure.empty()) {
    acme_retry_at_ = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    spdlog::error("service {}: no certificate from the ACME CA: {}; trying again in 30s", name,
                  failure);
    co_return;
  }
  bool renewed = acme_cert_;
  web_tls_ = std::move(ctx);
  acme_cert_ = true;
  renew_at_ = renew_at;
  spdlog::info("service {}: {} certificate for {} from the ACME CA, renewed in {}s", name,
               renewed ? "renewed the" : "got a", host_, seconds_until(renew_at_));
  announce();
}

}  // namespace burrow::kinds::share_url
