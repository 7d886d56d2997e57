// The agent's side of the three share URL modes: an HTTPS address NAME.DOMAIN on the relay, its
// TLS ended at the agent (blind), at the relay (inspect) or at the local service (passthrough).
#pragma once

#include <memory>

#include "agent/agent_config.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"

namespace burrow::kinds::share_url {

std::unique_ptr<agent::service> make_blind_side(agent::service_context& ctx,
                                                agent::service_config config);
std::unique_ptr<agent::service> make_inspect_side(agent::service_context& ctx,
                                                  agent::service_config config);
std::unique_ptr<agent::service> make_passthrough_side(agent::service_context& ctx,
                                                      agent::service_config config);

}  // namespace burrow::kinds::share_url
