// The public port the relay gave a service, kept in the agent's state directory so that an agent
// that restarts asks for the same port again (and gets it, if nobody took it meanwhile).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace burrow::kinds::tcp_port {

// STATE_DIR/public-port.NAME; empty for a name that cannot be a file name.
std::filesystem::path remembered_port_file(const std::filesystem::path& state_dir,
                                           const std::string& name);
// The remembered port, or 0 when there is none or the file does not hold a port (logged).
std::uint16_t load_remembered_port(const std::filesystem::path& state_dir, const std::string& name);
// Writes it; a failure is logged, not thrown: the tunnel works without it.
void remember_port(const std::filesystem::path& state_dir, const std::string& name,
                   std::uint16_t port);

}  // namespace burrow::kinds::tcp_port
