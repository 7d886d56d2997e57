// Process-wide logging: spdlog to stderr as UTC text lines or one JSON object per line, and a
// limiter so a flood of identical failures becomes one line per window.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace burrow {

enum class log_format { text, json };

// "text" or "json".
std::optional<log_format> parse_log_format(std::string_view text);

// Formats one record per line. Text: "2026-11-30T07:40:26.123Z INFO message", with control
// characters escaped so a peer-supplied string cannot forge lines. JSON:
// {"ts":"...","level":"info","msg":"..."}, always valid UTF-8 (bad bytes become U+FFFD).
class log_formatter final : public spdlog::formatter {
 public:
  explicit log_formatter(log_format format) : format_(format) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  log_format format_;
};

// `text` with every token-shaped word ("brw_" and 16 or more base64url characters after it)
// shown as "brw_[redacted]": a token passed to the wrong flag never reaches a log or an error.
std::string redact_tokens(std::string_view text);

// Replaces the default spdlog logger with a thread-safe stderr logger; flushes on warn and above.
void init_logging(log_format format, spdlog::level::level_enum level);

// Lets one line through per window and counts the ones it swallowed, so "local service refused"
// is logged once per burst rather than once per connection. Not thread-safe: each owner (a
// link, a listener) keeps its own on its own thread.
class log_limiter {
 public:
  explicit log_limiter(std::chrono::milliseconds window) : window_(window) {}

  // True when a line may be logged now; otherwise counts it as suppressed.
  bool allow(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // How many lines were swallowed since the last call; resets the count.
  std::uint64_t take_suppressed();

 private:
  std::chrono::milliseconds window_;
  std::optional<std::chrono::steady_clock::time_point> window_start_;
  std::uint64_t suppressed_ = 0;
};

}  // namespace burrow
