// Settings precedence (flags over environment over file) and typed getters with clear errors.
#include "core/settings.hpp"

#include <gtest/gtest.h>

#include "core/config_file.hpp"

namespace burrow {
namespace {

using namespace std::chrono_literals;

TEST(Settings, FlagsWinOverEnvironmentWhichWinsOverTheFile) {
  settings_layer file{{"relay", "file:1"}, {"token", "file-token"}, {"links", "3"}};
  settings_layer env{{"relay", "env:2"}, {"token", "env-token"}};
  settings_layer flags{{"relay", "flag:3"}};
  layered_settings s(flags, env, file);
  EXPECT_EQ(s.text("relay"), "flag:3");
  EXPECT_EQ(s.text("token"), "env-token");
  EXPECT_EQ(s.number_or("links", 2, 1, 64), 3u);
  EXPECT_EQ(s.number_or("missing", 2, 1, 64), 2u);
  EXPECT_EQ(s.origin("relay"), "--relay");
  EXPECT_EQ(s.origin("token"), "BURROW_TOKEN");
}

TEST(Settings, EnvironmentNamesAndKeys) {
  EXPECT_EQ(setting_env_name("relay-pin"), "BURROW_RELAY_PIN");
  EXPECT_EQ(setting_key("relay_pin"), "relay-pin");
  auto env = settings_from_env({"relay-pin", "links"}, [](const char* n) -> const char* {
    return std::string(n) == "BURROW_RELAY_PIN" ? "sha256:ab" : nullptr;
  });
  EXPECT_EQ(env.size(), 1u);
  EXPECT_EQ(env["relay-pin"], "sha256:ab");
}

TEST(Settings, BadValuesSayWhereTheyCameFrom) {
  layered_settings s({}, {{"links", "lots"}}, {{"grace", "soon"}});
  try {
    s.number_or("links", 2, 1, 64);
    FAIL();
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("BURROW_LINKS"), std::string::npos);
  }
  EXPECT_THROW(s.duration_or("grace", 1s), config_error);
  layered_settings ok({}, {}, {{"grace", "1m30s"}, {"listen", "a:1, b:2"}});
  EXPECT_EQ(ok.duration_or("grace", 1s), 90s);
  EXPECT_EQ(ok.list_or("listen", {}), (std::vector<std::string>{"a:1", "b:2"}));
}

TEST(ConfigFile, TopLevelSettingsAndServices) {
  auto f = parse_config_file(R"(
relay = "relay.example.com:7835"
relay_pin = "sha256:00"
links = 4

[[service]]
name = "db"
local = "127.0.0.1:5432"
remote_port = 15432
proxy_protocol = "v2"

[[service]]
local = 8080
)",
                             "burrow.toml", {"relay", "relay-pin", "links"},
                             {"name", "local", "remote-port", "proxy-protocol"});
  EXPECT_EQ(f.settings["relay"], "relay.example.com:7835");
  EXPECT_EQ(f.settings["relay-pin"], "sha256:00");
  EXPECT_EQ(f.settings["links"], "4");
  ASSERT_EQ(f.services.size(), 2u);
  EXPECT_EQ(f.services[0]["remote-port"], "15432");
  EXPECT_EQ(f.services[1]["local"], "8080");
}

TEST(ConfigFile, UnknownKeysAndSyntaxErrorsNameTheLine) {
  try {
    parse_config_file("relay = \"x\"\nrealy = \"typo\"\n", "f.toml", {"relay"}, {});
    FAIL();
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("f.toml:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("realy"), std::string::npos);
  }
  EXPECT_THROW(parse_config_file("relay = = 1", "f.toml", {"relay"}, {}), config_error);
  EXPECT_THROW(parse_config_file("[[service]]\nbogus = 1\n", "f.toml", {}, {"name"}), config_error);
  EXPECT_THROW(parse_config_file("relay = { a = 1 }", "f.toml", {"relay"}, {}), config_error);
  // toml++ 3.3.0 asserts on a table header without a key; it must be an error in every build.
  EXPECT_THROW(parse_config_file("[\n", "f.toml", {}, {}), config_error);
  EXPECT_THROW(parse_config_file("[\x1f]\n", "f.toml", {}, {}), config_error);
  EXPECT_THROW(parse_config_file(std::string(max_config_file_size + 1, '#'), "f.toml", {}, {}),
               config_error);
}

}  // namespace
}  // namespace burrow
