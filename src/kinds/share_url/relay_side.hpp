// HTTPS share URLs (NAME.DOMAIN, routed by the ClientHello's server name): the relay's side of
// the three modes.
#pragma once

#include "relay/kind_handler.hpp"

namespace burrow::kinds::share_url {

const relay::kind_handler& blind_relay_side();
const relay::kind_handler& inspect_relay_side();
const relay::kind_handler& passthrough_relay_side();

}  // namespace burrow::kinds::share_url
