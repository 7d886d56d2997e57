// A public TCP port on the relay: the relay's side.
#pragma once

#include "relay/kind_handler.hpp"

namespace burrow::kinds::tcp_port {

const relay::kind_handler& relay_side();

}  // namespace burrow::kinds::tcp_port
