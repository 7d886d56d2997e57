// Where Burrow keeps state when not told: the XDG base directory rules.
#pragma once

#include <filesystem>
#include <string_view>

namespace burrow {

// $XDG_STATE_HOME/burrow/PART, else $HOME/.local/state/burrow/PART, else ./.burrow-PART
std::filesystem::path default_state_dir(std::string_view part);

}  // namespace burrow
