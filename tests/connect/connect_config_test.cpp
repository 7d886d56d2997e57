// `burrow connect` settings: what is required, and messages that say what to do.
#include "connect/connect_config.hpp"

#include <gtest/gtest.h>

namespace burrow::connect {
namespace {

const std::string pin = "sha256:" + std::string(64, 'b');

TEST(ConnectConfig, FlagsWinAndDefaultsAreFilledIn) {
  layered_settings s({{"relay", "relay:7835"}, {"pin", pin}, {"listen", "2222"}},
                     {{"visitor-token", "from-env"}, {"links", "3"}}, {});
  auto c = make_connect_config(s, "ssh");
  EXPECT_EQ(c.service, "ssh");
  EXPECT_EQ(c.pin, pin);
  EXPECT_EQ(c.listen, "127.0.0.1:2222");  // a bare port listens on loopback only
  EXPECT_EQ(c.visitor_token, "from-env");
  EXPECT_EQ(c.links, 3u);
  EXPECT_TRUE(c.resume);
  EXPECT_GE(c.max_links, c.links);
}

TEST(ConnectConfig, MissingOrMalformedSettingsExplainThemselves) {
  auto message = [](settings_layer flags, std::string service = "ssh") {
    try {
      make_connect_config(layered_settings(std::move(flags), {}, {}), std::move(service));
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"pin", pin}}).find("--relay"), std::string::npos);
  EXPECT_NE(message({{"relay", "r:1"}}).find("--pin"), std::string::npos);
  EXPECT_NE(message({{"relay", "r:1"}, {"pin", "sha256:12"}}).find("not a SHA-256"),
            std::string::npos);
  EXPECT_NE(message({{"relay", "r:1"}, {"pin", pin}, {"listen", "x:y"}}).find("listen address"),
            std::string::npos);
  EXPECT_NE(message({{"relay", "r:1"}, {"pin", pin}, {"resume", "maybe"}}).find("resume"),
            std::string::npos);
  EXPECT_NE(message({{"relay", "r:1"}, {"pin", pin}}, "").find("service name"), std::string::npos);
}

}  // namespace
}  // namespace burrow::connect
