// The relay's settings by name, and their validation into a relay_config.
#pragma once

#include <string>
#include <vector>

#include "core/settings.hpp"
#include "relay/relay_config.hpp"

namespace burrow::relay {

const std::vector<std::string>& relay_setting_keys();
// Throws config_error saying which setting is wrong and where it came from.
relay_config make_relay_config(const layered_settings& s);

}  // namespace burrow::relay
