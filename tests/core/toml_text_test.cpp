// The guard in front of toml++: ASCII only, with the place of the first other byte.
#include "core/toml_text.hpp"

#include <gtest/gtest.h>

namespace burrow {
namespace {

TEST(toml_text, AsciiIsFineAndEscapesCarryTheRest) {
  EXPECT_FALSE(toml_text_problem("# Zurich office\na = \"\\u00e9\"\n"));
}

TEST(toml_text, NonAsciiIsRefusedWithItsPlace) {
  auto p = toml_text_problem("a = 1\n\xef\xbb\x9fqshid[q");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->rfind("line 2, column 1:", 0), 0u) << *p;
  // Each of these reached toml++'s unreachable point under the fuzzer.
  EXPECT_TRUE(toml_text_problem("o=\xcf\x90"));
  EXPECT_TRUE(toml_text_problem("a =0\"\"\"mult''\xc3\xa9\"\n"));
  EXPECT_TRUE(toml_text_problem("listen =0[\"0:7=\xd1\x85\"]"));
  EXPECT_TRUE(toml_text_problem("f = \"\"\"\\\\loc\n# c\\\xef\xbb\xa2\n"));
}

}  // namespace
}  // namespace burrow
