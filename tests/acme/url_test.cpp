// The https URLs the ACME client takes from a CA's server.
#include "acme/url.hpp"

#include <gtest/gtest.h>

namespace burrow::acme {
namespace {

TEST(AcmeUrl, ParsesHttpsUrls) {
  auto u = parse_https_url("https://acme.example.com/directory");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "acme.example.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/directory");
  EXPECT_EQ(u->authority(), "acme.example.com");

  u = parse_https_url("HTTPS://127.0.0.1:14000");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 14000);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->authority(), "127.0.0.1:14000");

  u = parse_https_url("https://[::1]:8443/a/b?c=d");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->target, "/a/b?c=d");
  EXPECT_EQ(u->authority(), "[::1]:8443");

  for (const char* bad :
       {"http://ca.test/", "https://", "https://:443/", "https://ca.test:0/",
        "https://ca.test:65536/", "https://ca.test:/", "https://u@ca.test/", "https://ca.test/a b",
        "https://ca.test/#frag", "https://[::1/", "https://::1/", "ftp://ca.test", "https://[[]/",
        "https://[ca.test]/", "https://[fe80::1%25eth0]/", "https://ca]test/",
        "https://ord[1r/?x=y", "https://[::1]x/"})
    EXPECT_FALSE(parse_https_url(bad)) << bad;
}

}  // namespace
}  // namespace burrow::acme
