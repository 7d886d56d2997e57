// Relay settings from a config file: the share URL listeners and certificate lifetime.
#include "relay/relay_settings.hpp"

#include <gtest/gtest.h>

#include "core/config_file.hpp"

namespace burrow::relay {
namespace {

relay_config from_file(const std::string& text) {
  auto file = parse_config_file(text, "relay.toml", relay_setting_keys(), {});
  return make_relay_config(layered_settings({}, {}, file.settings));
}

TEST(RelaySettings, ShareUrlListenersAndCertificateLifetime) {
  auto c = from_file(
      "domain = \"tunnels.example.com\"\nhttps_listen = [\"127.0.0.1:8443\", \"[::1]:8443\"]\n"
      "http_listen = [\"127.0.0.1:8080\"]\nshare_cert_lifetime = \"6h\"\n");
  EXPECT_EQ(c.domain, "tunnels.example.com");
  EXPECT_EQ(c.https_listen, (std::vector<std::string>{"127.0.0.1:8443", "[::1]:8443"}));
  EXPECT_TRUE(c.https_listen_given);
  EXPECT_EQ(c.http_listen, std::vector<std::string>{"127.0.0.1:8080"});
  EXPECT_TRUE(c.http_listen_given);
  EXPECT_EQ(c.share_cert_lifetime, std::chrono::hours(6));

  auto defaults = from_file("");
  EXPECT_FALSE(defaults.http_listen_given);
  EXPECT_EQ(defaults.share_cert_lifetime, std::chrono::hours(24));
}

TEST(RelaySettings, BadShareUrlSettingsAreRefused) {
  EXPECT_THROW(from_file("share_cert_lifetime = \"1s\"\n"), config_error);
  EXPECT_THROW(from_file("share_cert_lifetime = \"1000d\"\n"), config_error);
  EXPECT_THROW(from_file("http_listen = [\"127.0.0.1:99999\"]\n"), config_error);
  EXPECT_THROW(from_file("domain = \"localhost\"\n"), config_error);
}

TEST(RelaySettings, LinkEncryptionIsTlsUnlessNoneIsAsked) {
  EXPECT_EQ(from_file("").link_encryption, link::link_encryption::tls);
  EXPECT_EQ(from_file("link_encryption = \"tls\"\n").link_encryption, link::link_encryption::tls);
  EXPECT_EQ(from_file("link_encryption = \"none\"\n").link_encryption, link::link_encryption::none);
  EXPECT_THROW(from_file("link_encryption = \"off\"\n"), config_error);
  EXPECT_THROW(from_file("link_encryption = \"NONE\"\n"), config_error);
}

}  // namespace
}  // namespace burrow::relay
