// `burrow tcp` and `burrow up`: builds the agent's configuration and runs it.
#include <spdlog/spdlog.h>

#include "agent/agent.hpp"
#include "cli/options.hpp"

namespace burrow::cli {

int run_agent(const layered_settings& s, std::vector<settings_layer> service_layers) {
  std::vector<agent::service_config> services;
  int n = 0;
  for (auto& layer : service_layers)
    services.push_back(agent::make_service(layer, "service " + std::to_string(++n)));
  auto config = agent::make_agent_config(s, std::move(services));
  if (config.relay_pin.empty() && config.relay_ca.empty())
    spdlog::warn("no --relay-pin: the relay's certificate is checked against the system's CAs");
  if (config.link_encryption == link::link_encryption::none)
    spdlog::warn("{}", link::unencrypted_link_warning);
  agent::agent a(std::move(config));
  return a.run();
}

}  // namespace burrow::cli
