// Default state directories.
#include "core/state_path.hpp"

#include <cstdlib>
#include <string>

namespace burrow {

std::filesystem::path default_state_dir(std::string_view part) {
  namespace fs = std::filesystem;
  // XDG says relative values are invalid and must be ignored.
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg == '/')
    return fs::path(xdg) / "burrow" / part;
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".local" / "state" / "burrow" / part;
  return fs::path(".burrow-" + std::string(part));
}

}  // namespace burrow
