// Blind mode's default certificate: the relay's CA signs a request made with the agent's own key
// (the key never leaves the agent); renewed after two thirds of its life.
#include <spdlog/spdlog.h>

#include <fstream>

#include "kinds/share_url/blind.hpp"
#include "kinds/share_url/share_cert.hpp"
#include "link/link.hpp"

namespace burrow::kinds::share_url {

void blind_side::maybe_request_cert(link::link& l) {
  if (own_cert_ || host_.empty() || !config_.acme_directory.empty()) return;
  auto now = std::chrono::steady_clock::now();
  bool due = !web_tls_ || now >= renew_at_;
  bool waiting = requested_at_ != std::chrono::steady_clock::time_point{} &&
                 now - requested_at_ < std::chrono::seconds(10);
  if (!due || waiting) return;
  try {
    l.send_control(make_share_cert_request(config_.name, identity_.key));
    requested_at_ = now;
    spdlog::debug("service {}: asked the relay for a certificate for {}", config_.name, host_);
  } catch (const std::exception& e) {
    spdlog::error("service {}: cannot make a certificate request: {}", config_.name, e.what());
  }
}

void blind_side::on_certificate(const proto::certificate& c) {
  const auto& state_dir = identity_.state_dir;
  try {
    auto got = accept_share_cert(c, identity_.key, host_);
    bool renewed = web_tls_ != nullptr;
    web_tls_ = std::move(got.tls);
    renew_at_ = got.renew_at;
    requested_at_ = {};
    spdlog::info("service {}: {} certificate for {} from the relay's CA, renewed in {}s",
                 config_.name, renewed ? "renewed the" : "got a", host_,
                 std::chrono::duration_cast<std::chrono::seconds>(got.renew_at -
                                                                  std::chrono::steady_clock::now())
                     .count());
    if (!c.ca.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(state_dir, ec);
      std::ofstream out(state_dir / "relay-ca.pem", std::ios::binary | std::ios::trunc);
      out << c.ca;
      if (!out) spdlog::warn("cannot write {}", (state_dir / "relay-ca.pem").string());
    }
    announce();
  } catch (const std::exception& e) {
    spdlog::error("service {}: no certificate: {}; asking again shortly", config_.name, e.what());
  }
}

}  // namespace burrow::kinds::share_url
