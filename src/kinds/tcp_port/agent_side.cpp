// A public TCP port: registration with the port it had (kept across restarts in the state
// directory), the public address, plain streams.
#include "kinds/tcp_port/agent_side.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "agent/local_stream.hpp"
#include "core/address.hpp"
#include "kinds/tcp_port/remembered_port.hpp"
#include "link/stream.hpp"

namespace burrow::kinds::tcp_port {

namespace {

namespace asio = boost::asio;

class agent_side final : public agent::service {
 public:
  agent_side(agent::service_context& ctx, agent::service_config config)
      : ctx_(ctx),
        config_(std::move(config)),
        target_{ctx.resolve_local(config_)},
        assigned_port_(config_.remote_port) {
    if (config_.remote_port != 0) return;
    remembered_port_ = load_remembered_port(ctx_.state_dir(), config_.name);
    if (remembered_port_ == 0) return;
    assigned_port_ = remembered_port_;
    spdlog::info("service {}: asking for port {} again, as it had before (kept in {})",
                 config_.name, remembered_port_,
                 remembered_port_file(ctx_.state_dir(), config_.name).string());
  }

  const std::string& name() const override { return config_.name; }

  std::optional<proto::service_spec> registration() const override {
    return proto::service_spec{config_.name, config_.kind, assigned_port_};
  }

  void on_accepted(link::link&, const proto::service_result& r) override {
    if (assigned_port_ == r.remote_port && public_address_ == r.public_address) return;
    assigned_port_ = r.remote_port;
    public_address_ = r.public_address;
    if (config_.remote_port == 0 && r.remote_port != remembered_port_) {
      remember_port(ctx_.state_dir(), config_.name, r.remote_port);
      remembered_port_ = r.remote_port;
    }
    std::string line =
        fmt::format("tcp {} is public at {}",
                    format_host_port(config_.local_host, config_.local_port), r.public_address);
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
    spdlog::info("service {}: {}", config_.name, line);
  }

  std::optional<proto::service_spec> on_refused(const proto::service_result& r) override {
    // Refused a port the user did not ask for: the one this agent had (before a reconnect or a
    // restart) is gone. Take any port instead; every link hears this refusal, so each retries.
    bool remembered = config_.remote_port == 0 && r.remote_port != 0;
    if (!remembered) return std::nullopt;
    if (assigned_port_ == r.remote_port) {
      spdlog::warn("service {}: port {} is no longer ours ({}); asking for another", config_.name,
                   r.remote_port, r.message);
      assigned_port_ = 0;
    }
    return proto::service_spec{config_.name, config_.kind, 0};
  }

  // The relay reads these bytes: nothing here authenticates them.
  bool accepts_sealed(const proto::open_metadata&) const override { return false; }

  asio::awaitable<void> serve(std::shared_ptr<link::link> l, std::shared_ptr<link::stream> s,
                              proto::open_metadata meta) override {
    auto counted = ctx_.count_stream();
    auto socket = co_await agent::accept_with_local(ctx_, config_, target_, *l, *s);
    if (!socket) co_return;
    if (!co_await agent::send_proxy_header(*socket, config_, meta, *l, *s)) co_return;
    co_await s->pump(*socket);
  }

 private:
  agent::service_context& ctx_;
  const agent::service_config config_;
  agent::local_target target_;
  // Guarded by the context's mutex: the port the relay gave (asked for again after a
  // reconnect), and the address it is public at.
  std::uint16_t assigned_port_ = 0;
  std::string public_address_;
  // An auto-assigned port, as the state directory holds it for the next start.
  std::uint16_t remembered_port_ = 0;
};

}  // namespace

std::unique_ptr<agent::service> make_agent_side(agent::service_context& ctx,
                                                agent::service_config config) {
  return std::make_unique<agent_side>(ctx, std::move(config));
}

}  // namespace burrow::kinds::tcp_port
