// Request heads as the proxy forwards them: X-Forwarded-* stamped, client-sent values replaced,
// everything else written back as it came; invalid heads are refused.
#include "http/forward_head.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <string>
#include <utility>
#include <vector>

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

// A head the full parse writes out again and one passed on as it came must say the same: the same
// request line and the same fields, in the same order, with the same values.
void expect_same_message(const std::string& fast, const std::string& full) {
  auto a = parse_request_head(fast);
  auto b = parse_request_head(full);
  ASSERT_TRUE(a) << fast;
  ASSERT_TRUE(b) << full;
  EXPECT_EQ(a->method_string(), b->method_string());
  EXPECT_EQ(a->target(), b->target());
  EXPECT_EQ(a->version(), b->version());
  std::vector<std::pair<std::string, std::string>> fa, fb;
  for (const auto& f : *a) fa.emplace_back(f.name_string(), f.value());
  for (const auto& f : *b) fb.emplace_back(f.name_string(), f.value());
  EXPECT_EQ(fa, fb) << fast << "\n---\n" << full;
}

TEST(ForwardHead, PassesTheHeadOnAsItCame) {
  const std::string head =
      "GET /a%20b?c=d HTTP/1.1\r\nhost:web.burrow.localhost\r\nX-Odd:   spaced  value \r\n"
      "Accept: */*\r\n\r\n";
  auto out = rewrite_request_head(head + "body", visitor);
  // Everything the visitor sent, byte for byte, then the three stamped lines.
  EXPECT_EQ(out, head.substr(0, head.size() - 2) +
                     "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\n"
                     "X-Forwarded-Host: web.burrow.localhost\r\n\r\n");
  expect_same_message(out, rewrite_request_head_fully(head, visitor));
}

TEST(ForwardHead, EveryForwardingLineIsLeftOutWhateverItsCase) {
  const std::string head =
      "POST / HTTP/1.1\r\nx-forwarded-for: 10.0.0.1\r\nHost: h\r\nX-FORWARDED-PROTO: http\r\n"
      "X-Forwarded-Host: evil\r\nX-Forwarded-For: 10.0.0.2, 10.0.0.3\r\nContent-Length: 0\r\n"
      "x-forwarded-host:also-evil\r\n\r\n";
  auto out = rewrite_request_head(head, visitor);
  EXPECT_EQ(out,
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
            "X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: h\r\n"
            "\r\n");
  expect_same_message(out, rewrite_request_head_fully(head, visitor));
}

TEST(ForwardHead, HeadsThatCannotGoAsTheyCameAreWrittenOutAgain) {
  // A value folded over two lines (obs-fold): Beast unfolds it, and the head is written out
  // again from the full parse, unfolded, as before.
  const std::string folded = "GET / HTTP/1.1\r\nHost: h\r\nX-Long: first\r\n  second\r\n\r\n";
  auto out = rewrite_request_head(folded, visitor);
  EXPECT_EQ(out, rewrite_request_head_fully(folded, visitor));
  EXPECT_EQ(out.find("first\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("X-Forwarded-For: 203.0.113.7\r\n"), std::string::npos) << out;
  // Beast takes HTTP/1.0 and 1.1 only: any other version is refused, both ways.
  for (std::string_view odd : {"GET / HTTP/1.2\r\nHost: h\r\n\r\n", "GET / HTTP/2.0\r\n\r\n"}) {
    EXPECT_EQ(rewrite_request_head(odd, visitor), "") << odd;
    EXPECT_EQ(rewrite_request_head_fully(odd, visitor), "") << odd;
  }
  // More forwarding lines than the parser notes: the full parse drops them all.
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 12; ++i) many += "X-Forwarded-For: 10.0.0." + std::to_string(i) + "\r\n";
  many += "\r\n";
  auto out_many = rewrite_request_head(many, visitor);
  EXPECT_EQ(out_many, rewrite_request_head_fully(many, visitor));
  EXPECT_EQ(out_many.find("10.0.0."), std::string::npos) << out_many;
}

// What access rules read: the fields head_parser keeps on request are the ones Beast's own
// parser builds, folded values included.
TEST(ForwardHead, KeptFieldsAreTheFullParsesFields) {
  const std::pair<std::string_view, std::size_t> heads[] = {
      {"GET /a?b HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\nX-A:  one \r\n\r\n", 3},
      {"PURGE /x HTTP/1.0\r\nX-Long: first\r\n  second\r\nX-Forwarded-For: 1.1.1.1\r\n\r\n", 2}};
  for (auto [raw, fields] : heads) {
    request_head kept;
    head_parser<true> p;
    p.eager(false);
    p.keep_fields(&kept);
    p.set_input(raw.data(), raw.size());
    boost::system::error_code ec;
    p.put(boost::asio::buffer(raw.data(), raw.size()), ec);
    ASSERT_FALSE(ec) << ec.message();
    auto full = parse_request_head(raw);
    ASSERT_TRUE(full);
    EXPECT_EQ(kept.method_string(), full->method_string());
    EXPECT_EQ(kept.target(), full->target());
    EXPECT_EQ(kept.version(), full->version());
    std::vector<std::pair<std::string, std::string>> a, b;
    for (const auto& f : kept) a.emplace_back(f.name_string(), f.value());
    for (const auto& f : *full) b.emplace_back(f.name_string(), f.value());
    EXPECT_EQ(a, b) << raw;
    EXPECT_EQ(a.size(), fields) << raw;
  }
}

TEST(ForwardHead, ResponseHeadsGoAsTheyCameOrAreWrittenOutAgain) {
  auto parse = [](std::string_view raw, std::string& out) {
    head_parser<false> p;
    p.eager(false);
    p.set_input(raw.data(), raw.size());
    boost::system::error_code ec;
    std::size_t used = p.put(boost::asio::buffer(raw.data(), raw.size()), ec);
    EXPECT_FALSE(ec) << ec.message();
    EXPECT_TRUE(p.is_header_done());
    EXPECT_TRUE(append_response_head(out, raw.substr(0, used), p.facts()));
    return p.facts();
  };
  const std::string plain = "HTTP/1.0 203 Odd  Reason\r\nServer:x\r\nContent-Length: 3\r\n\r\n";
  std::string out;
  auto facts = parse(plain + "abc", out);
  EXPECT_EQ(out, plain);
  EXPECT_EQ(facts.status, 203u);
  EXPECT_EQ(facts.version, 10);
  out.clear();
  facts = parse("HTTP/1.1 200 OK\r\nX-A: one\r\n\ttwo\r\nContent-Length: 0\r\n\r\n", out);
  EXPECT_FALSE(facts.as_it_came);
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nX-A: one two\r\nContent-Length: 0\r\n\r\n");
}

}  // namespace
}  // namespace burrow::http
