// The guard in front of toml++: ASCII only, with the place of the first other byte.
#include "core/toml_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "core/toml.hpp"

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

TEST(toml_text, QuotedEscapesWhatTomlRequiresAndWritesAscii) {
  EXPECT_EQ(toml_quoted("ci runner 3"), "\"ci runner 3\"");
  EXPECT_EQ(toml_quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(toml_quoted(std::string("\n\t\x01\x7f", 4)), "\"\\u000A\\u0009\\u0001\\u007F\"");
  EXPECT_EQ(toml_quoted("caf\xc3\xa9 \xf0\x9f\x98\x80"), "\"caf\\u00E9 \\U0001F600\"");
  EXPECT_EQ(toml_quoted(""), "\"\"");
}

TEST(toml_text, QuotedRefusesWhatIsNotUtf8) {
  for (std::string bad : {"\xc3", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\x80", "\xff", "ok\xe2\x82"})
    EXPECT_THROW(toml_quoted(bad), std::invalid_argument) << bad.size();
}

// Any text of code points, quoted, passes the ASCII guard and reads back the same through toml++.
TEST(toml_text, QuotedReadsBackThroughToml) {
  std::mt19937 random(7);
  auto utf8 = [](char32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
  };
  const char32_t ranges[][2] = {{0, 0x7f}, {0x80, 0x7ff}, {0x800, 0xd7ff}, {0xe000, 0x10ffff}};
  for (int round = 0; round < 500; ++round) {
    std::string text;
    for (int n = random() % 20; n > 0; --n) {
      auto& r = ranges[random() % 4];
      text += utf8(r[0] + random() % (r[1] - r[0] + 1));
    }
    std::string doc = "k = " + toml_quoted(text) + "\n";
    ASSERT_FALSE(toml_text_problem(doc)) << doc;
    toml::table parsed = toml::parse(doc);  // throws toml::parse_error, failing the test
    EXPECT_EQ(parsed["k"].value<std::string>(), text) << doc;
  }
}

}  // namespace
}  // namespace burrow
