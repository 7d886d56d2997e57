// toml++ as every file of Burrow includes it: header-only, with its internal assertions off in
// every build. toml++ 3.3.0 asserts in parse_key() on input such as "[\n", which it otherwise
// reports as a clean parse error, so a Debug or sanitizer build would abort on a bad file.
//
// Its formatters are left out: Burrow writes TOML only for tokens.toml, by hand, because the
// formatter's one log10 made every burrow process map libm (relay/token_file.cpp).
#pragma once

#ifndef TOML_ENABLE_FORMATTERS
#define TOML_ENABLE_FORMATTERS 0
#endif

#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>
