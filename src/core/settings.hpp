// Layered settings: flags win over BURROW_* environment variables, which win over the TOML file.
// Each layer maps a setting's name ("relay-pin") to its text; typed getters say where a bad
// value came from.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace burrow {

// The items of a list setting: split at newlines when there are any (how repeated flags and TOML
// arrays are joined), else at commas; blanks around items are dropped, empty items skipped.
std::vector<std::string> split_list(std::string_view text);

struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using settings_layer = std::map<std::string, std::string>;

// "relay_pin" and "relay-pin" are one setting.
std::string setting_key(std::string_view name);
// BURROW_RELAY_PIN for "relay-pin".
std::string setting_env_name(std::string_view key);

// Reads the environment variables of `keys`; `getenv` is injectable for tests.
settings_layer settings_from_env(const std::vector<std::string>& keys,
                                 const std::function<const char*(const char*)>& getenv);

class layered_settings {
 public:
  layered_settings(settings_layer flags, settings_layer env, settings_layer file);

  std::optional<std::string> text(const std::string& key) const;
  std::string text_or(const std::string& key, std::string fallback) const;
  std::vector<std::string> list_or(const std::string& key, std::vector<std::string> fallback) const;
  std::uint64_t number_or(const std::string& key, std::uint64_t fallback, std::uint64_t min,
                          std::uint64_t max) const;
  std::chrono::milliseconds duration_or(const std::string& key,
                                        std::chrono::milliseconds fallback) const;
  // Where a setting came from, for messages: "--links", "BURROW_LINKS" or "the config file".
  std::string origin(const std::string& key) const;

 private:
  settings_layer flags_, env_, file_;
};

}  // namespace burrow
