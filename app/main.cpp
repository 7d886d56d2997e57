// The burrow executable: a thin entry point; all logic lives in the library.
#include "cli/commands.hpp"

int main(int argc, char** argv) {
  return burrow::cli::run(argc, argv);
}
