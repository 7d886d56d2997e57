// Human durations for flags and configuration: "250ms", "5s", "1h30m", "1d"; a plain number is
// seconds.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace burrow {

inline constexpr std::size_t max_duration_text = 64;

// Units d, h, m, s, ms, each at most once and in descending order ("1h30m", not "30m1h").
// Rejects empty, signed, fractional or unknown input, and anything over 100 years.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// The shortest form parse_duration reads back to the same value: "1h30m", "250ms", "0s".
std::string format_duration(std::chrono::milliseconds d);

}  // namespace burrow
