// Every tunnel kind this build knows, one entry each: the kind and the factory of its agent side.
// The agent makes each configured service through its kind's entry, never by asking the kind.
#pragma once

#include <memory>
#include <span>

#include "agent/agent_config.hpp"
#include "agent/service.hpp"
#include "agent/service_context.hpp"
#include "proto/tunnel_kind.hpp"

namespace burrow::kinds {

struct kind_entry {
  proto::tunnel_kind kind;
  // Throws config_error when the service cannot be served as configured.
  std::unique_ptr<agent::service> (*make_agent_service)(agent::service_context&,
                                                        agent::service_config);
};

std::span<const kind_entry> all_kinds();
// Every proto::tunnel_kind has one.
const kind_entry& entry_for(proto::tunnel_kind k);

}  // namespace burrow::kinds
