// Request heads as the proxy forwards them: X-Forwarded-* stamped, client-sent values replaced,
// everything else written back as it came; invalid heads are refused.
#include "http/forward_head.hpp"

#include <gtest/gtest.h>

namespace burrow::http {
namespace {

const forwarded_for visitor{"203.0.113.7", "https", "web.burrow.localhost"};

TEST(ForwardHead, StampsForwardedHeadersAndKeepsTheRest) {
  auto out = rewrite_request_head(
      "POST /upload?x=1 HTTP/1.1\r\nHost: web.burrow.localhost:8443\r\nX-Custom: a b\r\n"
      "Transfer-Encoding: chunked\r\n\r\nbody",
      visitor);
  ASSERT_FALSE(out.empty());
  EXPECT_TRUE(out.starts_with("POST /upload?x=1 HTTP/1.1\r\n")) << out;
  EXPECT_NE(out.find("X-Custom: a b\r\n"), std::string::npos);
  EXPECT_NE(out.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_NE(out.find("X-Forwarded-For: 203.0.113.7\r\n"), std::string::npos);
  EXPECT_NE(out.find("X-Forwarded-Proto: https\r\n"), std::string::npos);
  EXPECT_NE(out.find("X-Forwarded-Host: web.burrow.localhost:8443\r\n"), std::string::npos);
  EXPECT_TRUE(out.ends_with("\r\n\r\n"));
  EXPECT_EQ(out.find("body"), std::string::npos);  // the head only
}

TEST(ForwardHead, ClientSentForwardingHeadersAreReplaced) {
  auto out = rewrite_request_head(
      "GET / HTTP/1.1\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Proto: http\r\n\r\n", visitor);
  EXPECT_EQ(out.find("10.0.0.1"), std::string::npos) << out;
  EXPECT_EQ(out.find("X-Forwarded-Proto: http\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Forwarded-For: 203.0.113.7\r\n"), std::string::npos);
  // No Host: the share URL's own name stands in.
  EXPECT_NE(out.find("X-Forwarded-Host: web.burrow.localhost\r\n"), std::string::npos);
}

TEST(ForwardHead, Http10StaysHttp10) {
  auto out = rewrite_request_head("GET /a HTTP/1.0\r\n\r\n", visitor);
  EXPECT_TRUE(out.starts_with("GET /a HTTP/1.0\r\n")) << out;
}

TEST(ForwardHead, MetadataCannotInjectHeaderLines) {
  forwarded_for evil{"1.2.3.4\r\nX-Admin: yes", "https\r\nA: b", "h"};
  auto out = rewrite_request_head("GET / HTTP/1.1\r\nHost: a\r\n\r\n", evil);
  EXPECT_EQ(out.find("X-Admin"), std::string::npos) << out;
  EXPECT_EQ(out.find("A: b"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Forwarded-For: unknown\r\n"), std::string::npos) << out;
}

TEST(ForwardHead, InvalidOrIncompleteHeadsAreRefused) {
  EXPECT_EQ(rewrite_request_head("GET / HTTP/1.1\r\nHost: a\r\n", visitor), "");  // no end
  EXPECT_EQ(rewrite_request_head("GET / HTTP/1.1\r\nBad Header\r\n\r\n", visitor), "");
  EXPECT_EQ(rewrite_request_head("\x16\x03\x01 garbage\r\n\r\n", visitor), "");
  EXPECT_EQ(rewrite_request_head("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", visitor), "");
  std::string huge = "GET / HTTP/1.1\r\nX: " + std::string(max_head_size, 'a') + "\r\n\r\n";
  EXPECT_EQ(rewrite_request_head(huge, visitor), "");
}

TEST(ForwardHead, SimpleResponseIsCompleteAndCloses) {
  auto r = simple_response(502, "Bad Gateway", "down\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 502 Bad Gateway\r\n"));
  EXPECT_NE(r.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(r.ends_with("\r\n\r\ndown\n"));
}

}  // namespace
}  // namespace burrow::http
