// Reading and writing STATE_DIR/public-port.NAME.
#include "kinds/tcp_port/remembered_port.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "core/address.hpp"
#include "core/secret.hpp"

namespace burrow::kinds::tcp_port {

namespace fs = std::filesystem;

fs::path remembered_port_file(const fs::path& state_dir, const std::string& name) {
  bool plain = !name.empty() && name.size() <= 63 && name != "." && name != ".." &&
               std::all_of(name.begin(), name.end(), [](char c) {
                 return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
               });
  return plain ? state_dir / ("public-port." + name) : fs::path();
}

std::uint16_t load_remembered_port(const fs::path& state_dir, const std::string& name) {
  auto file = remembered_port_file(state_dir, name);
  std::error_code ec;
  if (file.empty() || !fs::exists(file, ec)) return 0;
  std::string text;
  try {
    text = read_file(file);
  } catch (const std::exception& e) {
    spdlog::warn("service {}: cannot read {}: {}; asking for any port", name, file.string(),
                 e.what());
    return 0;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto port = parse_port_range(text);
  if (!port || port->first != port->last || port->first == 0) {
    spdlog::warn("service {}: {} does not hold a port; asking for any port", name, file.string());
    return 0;
  }
  return port->first;
}

void remember_port(const fs::path& state_dir, const std::string& name, std::uint16_t port) {
  auto file = remembered_port_file(state_dir, name);
  if (file.empty()) return;
  try {
    std::error_code ec;
    if (!fs::exists(state_dir, ec)) {
      fs::create_directories(state_dir);
      fs::permissions(state_dir, fs::perms::owner_all, fs::perm_options::replace);
    }
    write_private_file(file, std::to_string(port) + "\n");
  } catch (const std::exception& e) {
    spdlog::warn("service {}: cannot remember port {} in {}: {}; a restarted agent gets any port",
                 name, port, file.string(), e.what());
  }
}

}  // namespace burrow::kinds::tcp_port
