// Parsing and formatting of human durations.
#include "core/duration.hpp"

#include <array>
#include <cstdint>

#include "core/ascii.hpp"

namespace burrow {
namespace {

struct unit {
  std::string_view name;
  std::uint64_t ms;
};
// Descending, and "ms" before "m" so the longer suffix wins.
constexpr std::array<unit, 5> units{{
    {"d", 86'400'000},
    {"h", 3'600'000},
    {"m", 60'000},
    {"s", 1'000},
    {"ms", 1},
}};
constexpr std::uint64_t max_ms = 36'525ull * 86'400'000ull;  // 100 years

using ascii::is_digit;

// Reads digits from the front of `text`; nullopt when there are none or the value exceeds max_ms.
std::optional<std::uint64_t> take_number(std::string_view& text) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < text.size() && is_digit(text[i])) {
    v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (v > max_ms) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  text.remove_prefix(i);
  return v;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text.empty() || text.size() > max_duration_text) return std::nullopt;
  std::uint64_t total = 0;
  std::size_t next_unit = 0;  // index into units: later units only
  bool first = true;
  while (!text.empty()) {
    auto n = take_number(text);
    if (!n) return std::nullopt;
    if (first && text.empty()) {
      if (*n > max_ms / 1000) return std::nullopt;
      return std::chrono::milliseconds(*n * 1000);  // a plain number is seconds
    }
    first = false;
    std::size_t u = next_unit;
    // "ms" must be tried before "m", which is earlier in the descending order.
    if (text.starts_with("ms")) {
      u = units.size() - 1;
      if (u < next_unit) return std::nullopt;
    } else {
      while (u < units.size() && !text.starts_with(units[u].name)) ++u;
      if (u == units.size()) return std::nullopt;  // unknown, repeated or out of order
    }
    text.remove_prefix(units[u].name.size());
    if (*n > max_ms / units[u].ms) return std::nullopt;
    total += *n * units[u].ms;
    if (total > max_ms) return std::nullopt;
    next_unit = u + 1;
  }
  return std::chrono::milliseconds(total);
}

std::string format_duration(std::chrono::milliseconds d) {
  const auto count = d.count();
  if (count == 0) return "0s";
  std::string out;
  // Negative durations are never parsed back, but formatting stays total for log lines.
  std::uint64_t rest =
      count < 0 ? 0 - static_cast<std::uint64_t>(count) : static_cast<std::uint64_t>(count);
  if (count < 0) out += '-';
  for (const auto& u : units) {
    if (rest >= u.ms) {
      out += std::to_string(rest / u.ms);
      out += u.name;
      rest %= u.ms;
    }
  }
  return out;
}

}  // namespace burrow
