// Logging: the text and JSON line formats, token redaction, init_logging's stderr logger, and
// log_limiter.
#include "core/log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <regex>
#include <string>

namespace burrow {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

std::string render(log_format f, spdlog::level::level_enum level, std::string_view text,
                   std::optional<system_clock::time_point> when = std::nullopt) {
  spdlog::details::log_msg msg(spdlog::source_loc{}, "test", level,
                               spdlog::string_view_t(text.data(), text.size()));
  if (when) msg.time = *when;
  spdlog::memory_buf_t buf;
  log_formatter(f).format(msg, buf);
  return std::string(buf.data(), buf.size());
}

system_clock::time_point example_time() {
  return sys_days{year{2026} / November / 30} + 7h + 40min + 26s + 123ms;
}

TEST(Log, ParsesFormat) {
  EXPECT_EQ(parse_log_format("text"), log_format::text);
  EXPECT_EQ(parse_log_format("json"), log_format::json);
  EXPECT_FALSE(parse_log_format("JSON"));
  EXPECT_FALSE(parse_log_format(""));
}

TEST(Log, TextLineFormat) {
  EXPECT_EQ(render(log_format::text, spdlog::level::info, "relay listening", example_time()),
            "2026-11-30T07:40:26.123Z INFO relay listening\n");
  EXPECT_EQ(render(log_format::text, spdlog::level::warn, "a\nb\x01", example_time()),
            "2026-11-30T07:40:26.123Z WARN a\\nb\\x01\n");
}

TEST(Log, JsonLineParsesAndRoundTripsHostileMessages) {
  const std::string hostile =
      "say \"hi\" \\ back\nslash\r\ttab\x01\x1f\x7f end \xc3\xa9 \xf0\x9f\x90\x87";
  const auto line = render(log_format::json, spdlog::level::err, hostile, example_time());
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // exactly one line
  boost::json::error_code ec;
  auto v = boost::json::parse(line, ec);
  ASSERT_FALSE(ec) << ec.message() << " in " << line;
  const auto& o = v.as_object();
  EXPECT_EQ(o.at("ts").as_string(), "2026-11-30T07:40:26.123Z");
  EXPECT_EQ(o.at("level").as_string(), "error");
  EXPECT_EQ(std::string(o.at("msg").as_string()), hostile);
  EXPECT_NE(line.find("\\u0001"), std::string::npos);
}

TEST(Log, JsonReplacesInvalidUtf8) {
  const std::string bad = "a\xff\xc3(\xed\xa0\x80z\xe2\x82";  // stray, truncated, surrogate
  const auto line = render(log_format::json, spdlog::level::info, bad);
  boost::json::error_code ec;
  auto v = boost::json::parse(line, ec);
  ASSERT_FALSE(ec) << line;
  const std::string msg(v.as_object().at("msg").as_string());
  EXPECT_EQ(msg.front(), 'a');
  EXPECT_NE(msg.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
  EXPECT_NE(msg.find('z'), std::string::npos);
}

TEST(Log, JsonLevels) {
  for (auto [l, name] : {std::pair{spdlog::level::trace, "trace"},
                         {spdlog::level::debug, "debug"},
                         {spdlog::level::info, "info"},
                         {spdlog::level::warn, "warn"},
                         {spdlog::level::critical, "critical"}}) {
    auto v = boost::json::parse(render(log_format::json, l, "x"));
    EXPECT_EQ(v.as_object().at("level").as_string(), name);
  }
}

// Redirects fd 2 into a temporary file for the lifetime of the object.
class stderr_capture {
 public:
  stderr_capture() : file_(std::tmpfile()), saved_(::dup(2)) { ::dup2(::fileno(file_), 2); }
  ~stderr_capture() {
    restore();
    std::fclose(file_);
  }
  void restore() {
    if (saved_ >= 0) {
      ::dup2(saved_, 2);
      ::close(saved_);
      saved_ = -1;
    }
  }
  std::string text() {
    std::string out;
    std::rewind(file_);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) out.append(buf, n);
    return out;
  }

 private:
  std::FILE* file_;
  int saved_;
};

TEST(Log, InitLoggingWritesJsonToStderrAndFlushesOnWarn) {
  auto previous = spdlog::default_logger();
  std::string captured;
  {
    stderr_capture cap;
    init_logging(log_format::json, spdlog::level::info);
    spdlog::debug("hidden");
    spdlog::warn("port {} busy", 8080);
    captured = cap.text();  // no explicit flush: warn must have flushed
    cap.restore();
  }
  spdlog::set_default_logger(previous);
  EXPECT_EQ(captured.find("hidden"), std::string::npos);
  auto v = boost::json::parse(captured);
  EXPECT_EQ(v.as_object().at("msg").as_string(), "port 8080 busy");
  EXPECT_EQ(v.as_object().at("level").as_string(), "warn");
  EXPECT_TRUE(std::regex_match(std::string(v.as_object().at("ts").as_string()),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(Log, TokensAreRedactedInEveryFormat) {
  const std::string token = "brw_Zm9vYmFyYmF6cXV4cXV1eHF1dXpxdXV4cXV1eHF1dXg";
  EXPECT_EQ(redact_tokens("relay " + token + ":7835 not found"),
            "relay brw_[redacted]:7835 not found");
  EXPECT_EQ(redact_tokens(token + "," + token), "brw_[redacted],brw_[redacted]");
  // Too short to be a token, or no token at all: left as it is.
  EXPECT_EQ(redact_tokens("brw_short and brw_"), "brw_short and brw_");
  EXPECT_EQ(redact_tokens("nothing here"), "nothing here");
  EXPECT_EQ(redact_tokens(""), "");
  for (auto f : {log_format::text, log_format::json}) {
    auto line = render(f, spdlog::level::err, "cannot resolve " + token);
    EXPECT_EQ(line.find(token), std::string::npos) << line;
    EXPECT_NE(line.find("cannot resolve brw_[redacted]"), std::string::npos) << line;
  }
}

TEST(Log, LimiterAllowsOneLinePerWindowAndCountsTheRest) {
  log_limiter limiter(1s);
  const auto t0 = steady_clock::time_point{} + 100h;
  EXPECT_TRUE(limiter.allow(t0));
  EXPECT_FALSE(limiter.allow(t0 + 1ms));
  EXPECT_FALSE(limiter.allow(t0 + 500ms));
  EXPECT_FALSE(limiter.allow(t0 + 999ms));
  EXPECT_EQ(limiter.take_suppressed(), 3u);
  EXPECT_EQ(limiter.take_suppressed(), 0u);
  EXPECT_TRUE(limiter.allow(t0 + 1s));
  EXPECT_FALSE(limiter.allow(t0 + 1500ms));
  EXPECT_TRUE(limiter.allow(t0 + 10s));
  EXPECT_EQ(limiter.take_suppressed(), 1u);
}

TEST(Log, LimiterWithZeroWindowAllowsEverything) {
  log_limiter limiter(0ms);
  const auto t = steady_clock::now();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(limiter.allow(t));
  EXPECT_EQ(limiter.take_suppressed(), 0u);
}

}  // namespace
}  // namespace burrow
