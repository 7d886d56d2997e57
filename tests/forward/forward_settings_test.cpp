// forward_config from settings: the command line's rule, [[forward]] tables, a table's own
// proxy-protocol over the shared one, and the values refused with a reason.
#include <gtest/gtest.h>

#include "core/config_file.hpp"
#include "forward/forward_settings.hpp"

namespace burrow::forward {
namespace {

layered_settings settings_of(settings_layer flags, const config_file& file = {}) {
  return layered_settings(std::move(flags), {}, file.settings);
}

TEST(ForwardSettings, TheCommandLinesRuleAndTheFilesTablesAddUp) {
  auto file = parse_config_file(
      "proxy_protocol = \"v1\"\nsource_connections = 3\n\n[[forward]]\nlisten = \"9000\"\n"
      "target = \"db:5432\"\nproxy_protocol = \"v2\"\n\n[[forward]]\nlisten = \"9001\"\n"
      "target = \"web:80\"\n",
      "forward.toml", forward_setting_keys(), forward_rule_keys(), "forward");
  auto c = make_forward_config(settings_of({{"connect-timeout", "2s"}}, file), file.services,
                               "8080", "127.0.0.1:80");
  ASSERT_EQ(c.rules.size(), 3u);
  EXPECT_EQ(c.rules[0].listen, "8080");
  EXPECT_EQ(c.rules[0].proxy, proto::proxy_version::v1);  // the shared setting
  EXPECT_EQ(c.rules[1].target, "db:5432");
  EXPECT_EQ(c.rules[1].proxy, proto::proxy_version::v2);  // the table's own
  EXPECT_EQ(c.rules[2].proxy, proto::proxy_version::v1);
  EXPECT_EQ(c.limits.max_open, 3u);
  EXPECT_EQ(c.connect_timeout, std::chrono::seconds(2));
  EXPECT_GE(c.threads, 1u);
}

TEST(ForwardSettings, BadValuesAreRefusedWithAReason) {
  auto refused = [](settings_layer flags, std::vector<settings_layer> tables, std::string listen,
                    std::string target) -> std::string {
    try {
      make_forward_config(settings_of(std::move(flags)), tables, listen, target);
    } catch (const config_error& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(refused({}, {}, "", "").find("nothing to forward"), std::string::npos);
  EXPECT_NE(refused({}, {}, "80", "").find("give both LISTEN and TARGET"), std::string::npos);
  EXPECT_NE(refused({}, {{{"listen", "1"}}}, "", "").find("[[forward]] 1 needs both"),
            std::string::npos);
  EXPECT_NE(refused({{"proxy-protocol", "v9"}}, {}, "1", "h:2").find("proxy-protocol must be"),
            std::string::npos);
  EXPECT_NE(refused({{"connect-timeout", "0s"}}, {}, "1", "h:2").find("connect-timeout"),
            std::string::npos);
  EXPECT_NE(refused({{"source-rate", "5"}, {"source-burst", "0"}}, {}, "1", "h:2")
                .find("source-burst must be at least 1"),
            std::string::npos);
  EXPECT_NE(refused({{"workers", "0"}}, {}, "1", "h:2"), "accepted");
}

}  // namespace
}  // namespace burrow::forward
