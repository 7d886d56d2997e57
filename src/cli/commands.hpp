// Subcommand dispatch for the burrow executable.
#pragma once

namespace burrow::cli {

int run(int argc, char** argv);

}  // namespace burrow::cli
