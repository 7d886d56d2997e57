// End-to-end TCP, reached by name through `burrow connect`: the relay's side.
#pragma once

#include "relay/kind_handler.hpp"

namespace burrow::kinds::tcp_e2ee {

const relay::kind_handler& relay_side();

}  // namespace burrow::kinds::tcp_e2ee
