// Share URLs in every mode: registration, the address and its announcement, and expiry.
#include "kinds/share_url/share_url.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "core/address.hpp"
#include "core/duration.hpp"
#include "kinds/share_url/share_cert.hpp"

namespace burrow::kinds::share_url {

share_url_side::share_url_side(agent::service_context& ctx, agent::service_config config)
    : ctx_(ctx),
      target_{ctx.resolve_local(config)},
      identity_(ctx.identity()),
      config_(ctx.named_for_this_agent(std::move(config))) {}

std::optional<proto::service_spec> share_url_side::registration() const {
  if (expired_) return std::nullopt;
  proto::service_spec spec{config_.name, config_.kind, 0};
  spec.plain_http = config_.plain_http;
  return spec;
}

void share_url_side::on_accepted(link::link&, const proto::service_result& r) {
  take_address(r);
  announce();
}

void share_url_side::take_address(const proto::service_result& r) {
  public_address_ = r.public_address;
  host_ = share_url_host(r.public_address);
}

void share_url_side::announce() {
  if (announced_) return;
  announced_ = true;
  std::string line =
      fmt::format("http {} is public at {}",
                  format_host_port(config_.local_host, config_.local_port), public_address_);
  std::string out = line + "\n" + visitor_note();
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", config_.name, line);
}

void share_url_side::touch() {
  last_request_->store(std::chrono::steady_clock::now().time_since_epoch().count());
}

void share_url_side::upkeep(std::chrono::steady_clock::time_point now) {
  auto idle = now - std::chrono::steady_clock::time_point(
                        std::chrono::steady_clock::duration(last_request_->load()));
  if (config_.expire_in.count() > 0 && now - ctx_.started >= config_.expire_in)
    expire("expire-in " + format_duration(config_.expire_in));
  else if (config_.idle_expiry.count() > 0 && idle >= config_.idle_expiry)
    expire("no request for " + format_duration(config_.idle_expiry));
}

// The agent then tells the relay to release the name.
void share_url_side::expire(const std::string& why) {
  expired_ = true;
  std::string line = fmt::format("share URL {} expired ({}); its name is released",
                                 public_address_.empty() ? config_.name : public_address_, why);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
  spdlog::info("service {}: {}", config_.name, line);
}

}  // namespace burrow::kinds::share_url
