// Tokens, hashing, constant-time comparison and private files.
#include "core/secret.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

namespace burrow {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with everything in it.
struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("burrow-secret-test-" + random_token().substr(4));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

TEST(SecretToken, FormatIsPrefixAndBase64Url) {
  auto token = random_token();
  ASSERT_EQ(token.size(), 4u + 43u);
  EXPECT_EQ(token.substr(0, 4), "brw_");
  for (char c : token.substr(4)) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    EXPECT_TRUE(ok) << "unexpected character '" << c << "' in " << token;
  }
}

TEST(SecretToken, TokensAreUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(random_token());
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(SecretSha256, KnownVectors) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(SecretHex, Lowercase) {
  const std::uint8_t bytes[] = {0x00, 0x0f, 0xab, 0xff};
  EXPECT_EQ(hex(bytes), "000fabff");
  EXPECT_EQ(hex({}), "");
}

TEST(SecretHex, DecodesWholeBytesThatFit) {
  std::uint8_t out[4] = {};
  EXPECT_EQ(from_hex("000fABff", out), 4u);
  EXPECT_EQ(hex(out), "000fabff");
  EXPECT_EQ(from_hex("7f", out), 1u);
  EXPECT_EQ(out[0], 0x7f);
  for (const char* bad : {"", "0", "0g", "+1", " 1", "000fabff00"})
    EXPECT_EQ(from_hex(bad, out), 0u) << bad;
}

TEST(SecretConstantTimeEqual, ComparesContentAndLength) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("brw_secret", "brw_secret"));
  EXPECT_FALSE(constant_time_equal("brw_secret", "brw_secreT"));
  EXPECT_FALSE(constant_time_equal("brw_secret", "brw_secre"));
  EXPECT_FALSE(constant_time_equal("brw_secret", std::string_view("brw_secret\0", 11)));
  EXPECT_FALSE(constant_time_equal("", "x"));
  std::string a = random_token();
  std::string b = a;
  EXPECT_TRUE(constant_time_equal(a, b));
}

TEST(SecretFile, WritesPrivateFileAtomically) {
  temp_dir dir;
  auto file = dir.path / "agent.token";
  write_private_file(file, "first\n");
  EXPECT_EQ(read_file(file), "first\n");
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  write_private_file(file, "second");
  EXPECT_EQ(read_file(file), "second");
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // No temporary is left behind.
  int entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir.path)) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(SecretFile, WriteIntoMissingDirectoryThrows) {
  temp_dir dir;
  EXPECT_THROW(write_private_file(dir.path / "missing" / "f", "x"), std::runtime_error);
}

TEST(SecretFile, ReadMissingFileNamesThePath) {
  temp_dir dir;
  auto file = dir.path / "nope.pem";
  try {
    read_file(file);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST(SecretFile, ReadRefusesOverOneMiB) {
  temp_dir dir;
  auto exact = dir.path / "exact";
  auto over = dir.path / "over";
  write_private_file(exact, std::string(max_read_file_size, 'a'));
  write_private_file(over, std::string(max_read_file_size + 1, 'a'));
  EXPECT_EQ(read_file(exact).size(), max_read_file_size);
  EXPECT_THROW(read_file(over), std::runtime_error);
  EXPECT_THROW(read_file(dir.path), std::runtime_error);  // a directory is not a file
}

}  // namespace
}  // namespace burrow
