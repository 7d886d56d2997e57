// Agent configuration: services from settings, validation messages that say what to do.
#include "agent/agent_config.hpp"

#include <gtest/gtest.h>

namespace burrow::agent {
namespace {

const std::string pin = "sha256:" + std::string(64, 'a');

TEST(AgentConfig, ServiceFromSettings) {
  auto s = make_service(
      {{"local", "5432"}, {"remote-port", "15432"}, {"proxy-protocol", "v2"}, {"e2ee", "false"}},
      "x");
  EXPECT_EQ(s.local_host, "127.0.0.1");
  EXPECT_EQ(s.local_port, 5432);
  EXPECT_EQ(s.remote_port, 15432);
  EXPECT_EQ(s.proxy, proto::proxy_version::v2);
  EXPECT_EQ(s.name, "tcp-5432");
  EXPECT_EQ(s.kind, proto::tunnel_kind::tcp_port);
  EXPECT_FALSE(s.name_given);
  auto h = make_service({{"local", "[::1]:22"}, {"name", "ssh"}}, "x");
  EXPECT_EQ(h.local_host, "::1");
  EXPECT_EQ(h.name, "ssh");
  EXPECT_TRUE(h.name_given);
  EXPECT_EQ(h.kind, proto::tunnel_kind::tcp_e2ee);  // end to end unless asked otherwise
  EXPECT_THROW(make_service({{"local", "nope"}}, "x"), config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"proxy-protocol", "v3"}}, "x"), config_error);
  EXPECT_THROW(make_service({}, "x"), config_error);
}

TEST(AgentConfig, EndToEndServicesHaveNoPublicPortAndMayAskForAVisitorToken) {
  auto s = make_service({{"local", "22"}, {"visitor-token", "long-enough"}}, "x");
  EXPECT_EQ(s.kind, proto::tunnel_kind::tcp_e2ee);
  EXPECT_EQ(s.visitor_token, "long-enough");
  // A public port cannot be had end to end, and a token cannot protect a public port.
  EXPECT_THROW(make_service({{"local", "22"}, {"remote-port", "2222"}}, "x"), config_error);
  EXPECT_THROW(
      make_service({{"local", "22"}, {"e2ee", "false"}, {"visitor-token", "long-enough"}}, "x"),
      config_error);
  EXPECT_THROW(make_service({{"local", "22"}, {"visitor-token", "short"}}, "x"), config_error);
  EXPECT_THROW(make_service({{"local", "22"}, {"e2ee", "maybe"}}, "x"), config_error);
  auto settings =
      layered_settings({{"relay", "r:1"}, {"token", "t"}, {"e2ee-cert", "c.pem"}}, {}, {});
  EXPECT_THROW(make_agent_config(settings, {s}), config_error);  // --e2ee-key missing
}

TEST(AgentConfig, HttpServicesAreBlindShareUrlsByDefault) {
  auto s = make_service({{"local", "8443"}, {"kind", "http"}}, "x");
  EXPECT_EQ(s.kind, proto::tunnel_kind::share_blind);
  EXPECT_EQ(s.name, "http-8443");
  EXPECT_EQ(make_service({{"local", "8443"}, {"kind", "http"}, {"mode", "passthrough"}}, "x").kind,
            proto::tunnel_kind::share_passthrough);
  EXPECT_EQ(make_service({{"local", "8443"}, {"kind", "http"}, {"mode", "inspect"}}, "x").kind,
            proto::tunnel_kind::share_inspect);
  auto own =
      make_service({{"local", "80"}, {"kind", "http"}, {"cert", "c.pem"}, {"key", "k.pem"}}, "x");
  EXPECT_EQ(own.cert_file, "c.pem");
  EXPECT_EQ(own.key_file, "k.pem");
  // Unknown modes, half a certificate, a certificate in passthrough, and tcp-only settings are
  // refused with the reason.
  EXPECT_THROW(make_service({{"local", "80"}, {"kind", "http"}, {"mode", "opaque"}}, "x"),
               config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"kind", "http"}, {"cert", "c.pem"}}, "x"),
               config_error);
  EXPECT_THROW(make_service({{"local", "80"},
                             {"kind", "http"},
                             {"mode", "passthrough"},
                             {"cert", "c.pem"},
                             {"key", "k.pem"}},
                            "x"),
               config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"cert", "c.pem"}, {"key", "k.pem"}}, "x"),
               config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"kind", "http"}, {"remote-port", "8080"}}, "x"),
               config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"mode", "passthrough"}}, "x"), config_error);
  EXPECT_THROW(make_service({{"local", "80"}, {"kind", "udp"}}, "x"), config_error);
}

TEST(AgentConfig, PrecedenceReachesTheConfig) {
  layered_settings s({{"links", "5"}}, {{"relay", "env:7835"}, {"links", "3"}},
                     {{"relay", "file:7835"}, {"token", "t"}, {"relay-pin", pin}});
  auto c = make_agent_config(s, {make_service({{"local", "80"}}, "x")});
  EXPECT_EQ(c.relay, "env:7835");
  EXPECT_EQ(c.links, 5u);
  EXPECT_EQ(c.token, "t");
  EXPECT_EQ(c.relay_pin, pin);
}

TEST(AgentConfig, EndToEndSessionsLastTwoHoursUnlessToldFromOneSecondToADay) {
  auto svc = std::vector{make_service({{"local", "80"}}, "x")};
  auto with = [&](std::map<std::string, std::string> file) {
    file.emplace("relay", "r:1");
    file.emplace("token", "t");
    return make_agent_config(layered_settings({}, {}, file), svc);
  };
  EXPECT_EQ(with({}).e2ee_session_max_age, std::chrono::hours(2));
  EXPECT_EQ(with({{"e2ee-session-max-age", "10m"}}).e2ee_session_max_age, std::chrono::minutes(10));
  EXPECT_EQ(with({{"e2ee-session-max-age", "1s"}}).e2ee_session_max_age, std::chrono::seconds(1));
  EXPECT_EQ(with({{"e2ee-session-max-age", "24h"}}).e2ee_session_max_age, std::chrono::hours(24));
  for (const char* bad : {"0s", "500ms", "25h", "soon"})
    EXPECT_THROW(with({{"e2ee-session-max-age", bad}}), config_error) << bad;
}

TEST(AgentConfig, MissingAndBadSettingsExplainThemselves) {
  auto svc = std::vector{make_service({{"local", "80"}}, "x")};
  try {
    make_agent_config(layered_settings({}, {}, {}), svc);
    FAIL();
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("--relay"), std::string::npos);
  }
  EXPECT_THROW(make_agent_config(layered_settings({{"relay", "r:1"}}, {}, {}), svc), config_error);
  EXPECT_THROW(
      make_agent_config(
          layered_settings({{"relay", "r:1"}, {"token", "t"}, {"relay-pin", "xyz"}}, {}, {}), svc),
      config_error);
  auto twice = std::vector{make_service({{"local", "80"}, {"name", "a"}}, "x"),
                           make_service({{"local", "81"}, {"name", "a"}}, "y")};
  EXPECT_THROW(
      make_agent_config(layered_settings({{"relay", "r:1"}, {"token", "t"}}, {}, {}), twice),
      config_error);
}

}  // namespace
}  // namespace burrow::agent
