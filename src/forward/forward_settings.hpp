// `burrow forward`'s settings: the command line's LISTEN TARGET, or [[forward]] tables in its
// file, and the settings every forward shares.
#pragma once

#include <string>
#include <vector>

#include "core/settings.hpp"
#include "forward/forwarder.hpp"

namespace burrow::forward {

// Top-level keys (flags, BURROW_* and the file's top level).
const std::vector<std::string>& forward_setting_keys();
// The keys of a [[forward]] table.
const std::vector<std::string>& forward_rule_keys();

// Throws config_error naming the bad value. `rules` come from the command line or the file's
// tables; a table's proxy-protocol wins over the shared one.
forward_config make_forward_config(const layered_settings& s,
                                   const std::vector<settings_layer>& tables,
                                   const std::string& listen, const std::string& target);

}  // namespace burrow::forward
