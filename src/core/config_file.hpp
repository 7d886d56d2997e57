// Reads a TOML configuration file into settings layers: top-level keys become settings and each
// [[service]] table (an agent's) or [[forward]] table (`burrow forward`'s) becomes one layer of
// its own. Unknown keys are refused, so typos do not pass silently.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/settings.hpp"

namespace burrow {

struct config_file {
  settings_layer settings;
  std::vector<settings_layer> services;  // one per [[TABLE]] table
};

inline constexpr std::size_t max_config_file_size = 1024 * 1024;

// Throws config_error naming the origin, line and column of the problem. `table` names the
// array of tables whose keys are `service_keys` (none are allowed when those are empty).
config_file parse_config_file(std::string_view text, std::string_view origin,
                              const std::vector<std::string>& keys,
                              const std::vector<std::string>& service_keys,
                              std::string_view table = "service");
config_file load_config_file(const std::filesystem::path& path,
                             const std::vector<std::string>& keys,
                             const std::vector<std::string>& service_keys,
                             std::string_view table = "service");

}  // namespace burrow
