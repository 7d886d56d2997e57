// The tokens file: parsing every field, clear errors for bad input, writing and reading back,
// atomic 0600 saves.
#include "relay/token_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include "core/secret.hpp"

namespace burrow::relay {
namespace {

const std::string sha_a(64, 'a');
const std::string sha_b(64, 'b');

std::string error_of(std::string_view text) {
  try {
    parse_token_file(text, "tokens.toml");
  } catch (const token_file_error& e) {
    return e.what();
  }
  return "";
}

TEST(token_file, ParsesEveryField) {
  auto f = parse_token_file(R"(
revoked_agent_token = "0123456789ab"
[[token]]
id = "aaaaaaaaaaaa"
label = "ci"
sha256 = ")" + sha_a + R"("
names = ["ci-*", "docs"]
ports = ["20000-20099", 20200]
max_services = 4
bandwidth = "10MB/s"
created = 2024-05-01T12:00:00Z

[[token]]
sha256 = ")" + sha_b + R"("
bandwidth = 5000
)",
                            "tokens.toml");
  EXPECT_EQ(f.revoked_agent_token, "0123456789ab");
  ASSERT_EQ(f.tokens.size(), 2u);
  auto& a = f.tokens[0];
  EXPECT_EQ(a.id, "aaaaaaaaaaaa");
  EXPECT_EQ(a.label, "ci");
  EXPECT_EQ(a.sha256, sha_a);
  EXPECT_EQ(a.scope.names, (std::vector<std::string>{"ci-*", "docs"}));
  ASSERT_EQ(a.scope.ports.size(), 2u);
  EXPECT_EQ(a.scope.ports[1].first, 20200);
  EXPECT_EQ(a.scope.max_services, 4u);
  EXPECT_EQ(a.scope.bandwidth, 10000000u);
  EXPECT_EQ(a.created, 1714564800);
  auto& b = f.tokens[1];
  EXPECT_EQ(b.id, sha_b.substr(0, 12));  // the id defaults to the hash's first 12 digits
  EXPECT_EQ(b.scope.names, (std::vector<std::string>{"*"}));
  EXPECT_TRUE(b.scope.ports.empty());
  EXPECT_EQ(b.scope.bandwidth, 5000u);
}

TEST(token_file, EmptyFileHoldsNoTokens) {
  auto f = parse_token_file("", "tokens.toml");
  EXPECT_TRUE(f.tokens.empty());
  EXPECT_TRUE(f.revoked_agent_token.empty());
}

TEST(token_file, BadInputIsReportedWithFileAndEntry) {
  auto entry = [](std::string body) { return "[[token]]\nsha256 = \"" + sha_a + "\"\n" + body; };
  EXPECT_NE(error_of("[[token]\n").find("tokens.toml:1"), std::string::npos);
  EXPECT_NE(error_of("[\n").find("tokens.toml:1"), std::string::npos);  // toml++ used to assert
  EXPECT_NE(error_of("[[token]]\nlabel = \"x\"\n").find("has no sha256"), std::string::npos);
  EXPECT_NE(error_of("[[token]]\nsha256 = \"abc\"\n").find("64 lowercase hex"), std::string::npos);
  auto names = error_of(entry("names = [\"Bad Name\"]\n"));
  EXPECT_NE(names.find("token 1"), std::string::npos) << names;
  EXPECT_NE(names.find("line 3"), std::string::npos) << names;
  EXPECT_NE(error_of(entry("names = []\n")).find("names"), std::string::npos);
  EXPECT_NE(error_of(entry("ports = [\"0\"]\n")).find("port range"), std::string::npos);
  EXPECT_NE(error_of(entry("ports = [70000]\n")).find("port range"), std::string::npos);
  EXPECT_NE(error_of(entry("max_services = -1\n")).find("max_services"), std::string::npos);
  EXPECT_NE(error_of(entry("bandwidth = \"fast\"\n")).find("bandwidth"), std::string::npos);
  EXPECT_NE(error_of(entry("created = \"yesterday\"\n")).find("created"), std::string::npos);
  EXPECT_NE(error_of(entry("token = \"brw_secret\"\n")).find("unknown key"), std::string::npos);
  EXPECT_NE(error_of(entry("label = \"a\\u0001\"\n")).find("label"), std::string::npos);
  EXPECT_NE(error_of("surprise = 1\n").find("unknown key"), std::string::npos);
  EXPECT_NE(error_of("token = 1\n").find("[[token]]"), std::string::npos);
  EXPECT_NE(error_of(entry("") + entry("")).find("twice"), std::string::npos);
  EXPECT_NE(error_of(std::string(max_token_file_size + 1, '#')).find("1 MiB"), std::string::npos);
}

TEST(token_file, TooManyEntriesAreRefused) {
  std::string text;
  for (std::size_t i = 0; i <= max_token_entries; ++i)
    text += "[[token]]\nsha256 = \"" + hex(sha256(std::to_string(i))) + "\"\n";
  EXPECT_NE(error_of(text).find("more than"), std::string::npos);
}

TEST(token_file, WritesWhatItReadsBack) {
  token_file f;
  f.revoked_agent_token = "0123456789ab";
  token_entry a;
  a.id = "aaaaaaaaaaaa";
  a.label = "ci \"quoted\" \\ label";
  a.sha256 = sha_a;
  a.scope.names = {"ci-*"};
  a.scope.ports = {{20000, 20099}, {20200, 20200}};
  a.scope.max_services = 3;
  a.scope.bandwidth = 1500000;
  a.created = 1714564800;
  token_entry b;
  b.id = "bbbbbbbbbbbb";
  b.sha256 = sha_b;
  f.tokens = {a, b};
  auto text = format_token_file(f);
  EXPECT_EQ(text.find("brw_"), std::string::npos);
  EXPECT_EQ(parse_token_file(text, "written"), f) << text;
}

TEST(token_file, SavesAtomicallyWithMode0600) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() /
             ("burrow-tokens-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  auto path = dir / "tokens.toml";
  EXPECT_TRUE(load_token_file(path).tokens.empty());  // missing: no tokens
  token_file f;
  token_entry e;
  e.id = "aaaaaaaaaaaa";
  e.sha256 = sha_a;
  f.tokens.push_back(e);
  save_token_file(path, f);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  EXPECT_EQ(load_token_file(path), f);
  std::size_t files = 0;
  for ([[maybe_unused]] auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u);  // no temporary left behind
  std::filesystem::remove_all(dir);
}

TEST(token_file, IdIsTheHashPrefix) {
  EXPECT_EQ(token_id("brw_x"), hex(sha256("brw_x")).substr(0, 12));
}

}  // namespace
}  // namespace burrow::relay
