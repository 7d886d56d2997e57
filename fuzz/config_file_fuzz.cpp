// libFuzzer target: configuration files (`-c FILE`) of the relay and of agents. Parsing must never
// crash nor throw anything but config_error.
#include <cstdint>
#include <string_view>

#include "agent/agent_config.hpp"
#include "core/config_file.hpp"
#include "relay/relay_settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    burrow::parse_config_file(text, "fuzz.toml", burrow::relay::relay_setting_keys(), {});
  } catch (const burrow::config_error&) {
  }
  try {
    burrow::parse_config_file(text, "fuzz.toml", burrow::agent::agent_setting_keys(),
                              burrow::agent::service_setting_keys());
  } catch (const burrow::config_error&) {
  }
  return 0;
}
