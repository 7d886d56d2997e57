// The agent's side of a public TCP port on the relay: the relay reads the visitors' bytes and
// passes them on a stream; the agent joins each stream to a connection to its local service.
#pragma once

#include <memory>

#include "agent/agent_config.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"

namespace burrow::kinds::tcp_port {

std::unique_ptr<agent::service> make_agent_side(agent::service_context& ctx,
                                                agent::service_config config);

}  // namespace burrow::kinds::tcp_port
