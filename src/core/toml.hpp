// toml++ as every file of Burrow includes it: header-only, with its internal assertions off in
// every build. toml++ 3.3.0 asserts in parse_key() on input such as "[\n", which it otherwise
// reports as a clean parse error, so a Debug or sanitizer build would abort on a bad file.
#pragma once

#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>
