// What a fuzz target does when a property of its parser fails: name the target and the property,
// and abort, so that libFuzzer keeps the input that did it.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace burrow::fuzz {

// BURROW_FUZZ_TARGET is each target's name, defined by fuzz/CMakeLists.txt.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", BURROW_FUZZ_TARGET, what);
    std::abort();
  }
}

}  // namespace burrow::fuzz
