// stderr logging setup, the text/JSON line formatter and the log limiter.
#include "core/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <ctime>
#include <iterator>
#include <utility>

namespace burrow {
namespace {

void append(spdlog::memory_buf_t& dest, std::string_view s) {
  dest.append(s.data(), s.data() + s.size());
}

void append_timestamp(spdlog::memory_buf_t& dest, spdlog::log_clock::time_point tp) {
  using namespace std::chrono;
  const auto since = tp.time_since_epoch();
  auto secs = duration_cast<seconds>(since);
  auto ms = duration_cast<milliseconds>(since - secs).count();
  if (ms < 0) {  // before 1970: keep the millisecond field positive
    secs -= seconds(1);
    ms += 1000;
  }
  const std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  fmt::format_to(std::back_inserter(dest), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 ms);
}

std::string_view level_name(spdlog::level::level_enum l, bool upper) {
  switch (l) {
    case spdlog::level::trace:
      return upper ? "TRACE" : "trace";
    case spdlog::level::debug:
      return upper ? "DEBUG" : "debug";
    case spdlog::level::info:
      return upper ? "INFO" : "info";
    case spdlog::level::warn:
      return upper ? "WARN" : "warn";
    case spdlog::level::err:
      return upper ? "ERROR" : "error";
    case spdlog::level::critical:
      return upper ? "CRITICAL" : "critical";
    default:
      return upper ? "OFF" : "off";
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void append_json_escaped(spdlog::memory_buf_t& dest, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      dest.push_back('\\');
      dest.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      const char esc[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
      dest.append(esc, esc + sizeof esc);
      ++i;
    } else if (c < 0x80) {
      dest.push_back(static_cast<char>(c));
      ++i;
    } else if (auto n = utf8_sequence(s, i); n != 0) {
      append(dest, s.substr(i, n));
      i += n;
    } else {
      append(dest, "\\ufffd");
      ++i;
    }
  }
}

// Text lines keep printable bytes as they are; only control characters are escaped.
void append_text_escaped(spdlog::memory_buf_t& dest, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      append(dest, "\\n");
    } else if (c == '\r') {
      append(dest, "\\r");
    } else if (c == '\t') {
      append(dest, "\\t");
    } else if (c < 0x20 || c == 0x7F) {
      const char esc[] = {'\\', 'x', hex[c >> 4], hex[c & 0xF]};
      dest.append(esc, esc + sizeof esc);
    } else {
      dest.push_back(ch);
    }
  }
}

}  // namespace

std::optional<log_format> parse_log_format(std::string_view text) {
  if (text == "text") return log_format::text;
  if (text == "json") return log_format::json;
  return std::nullopt;
}

std::string redact_tokens(std::string_view text) {
  constexpr std::string_view prefix = "brw_";
  constexpr std::size_t min_body = 16;
  auto base64url = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  };
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    auto at = text.find(prefix, i);
    if (at == std::string_view::npos) break;
    std::size_t end = at + prefix.size();
    while (end < text.size() && base64url(text[end])) ++end;
    out.append(text.substr(i, at - i));
    if (end - at - prefix.size() >= min_body)
      out.append("brw_[redacted]");
    else
      out.append(text.substr(at, end - at));
    i = end;
  }
  out.append(text.substr(std::min(i, text.size())));
  return out;
}

void log_formatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  std::string_view payload(msg.payload.data(), msg.payload.size());
  std::string redacted;
  if (payload.find("brw_") != std::string_view::npos) {
    redacted = redact_tokens(payload);
    payload = redacted;
  }
  if (format_ == log_format::json) {
    append(dest, "{\"ts\":\"");
    append_timestamp(dest, msg.time);
    append(dest, "\",\"level\":\"");
    append(dest, level_name(msg.level, false));
    append(dest, "\",\"msg\":\"");
    append_json_escaped(dest, payload);
    append(dest, "\"}\n");
  } else {
    append_timestamp(dest, msg.time);
    dest.push_back(' ');
    append(dest, level_name(msg.level, true));
    dest.push_back(' ');
    append_text_escaped(dest, payload);
    dest.push_back('\n');
  }
}

std::unique_ptr<spdlog::formatter> log_formatter::clone() const {
  return std::make_unique<log_formatter>(format_);
}

void init_logging(log_format format, spdlog::level::level_enum level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_formatter(std::make_unique<log_formatter>(format));
  auto logger = std::make_shared<spdlog::logger>("burrow", std::move(sink));
  logger->set_level(level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

bool log_limiter::allow(std::chrono::steady_clock::time_point now) {
  if (!window_start_ || now - *window_start_ >= window_) {
    window_start_ = now;
    return true;
  }
  ++suppressed_;
  return false;
}

std::uint64_t log_limiter::take_suppressed() {
  return std::exchange(suppressed_, 0);
}

}  // namespace burrow
