// tokens.toml through toml++: every field checked, bounded and reported with its place.
#include "relay/token_file.hpp"

#include "core/toml.hpp"

#include <algorithm>
#include <ctime>
#include <set>
#include <sstream>
#include <system_error>

#include "core/secret.hpp"
#include "core/toml_text.hpp"

namespace burrow::relay {

namespace {

std::string where(std::string_view origin, const toml::source_region& r) {
  return std::string(origin) + ":" + std::to_string(r.begin.line) + ":" +
         std::to_string(r.begin.column);
}

bool lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f;
  });
}

// A TOML offset date-time in UTC: 2024-05-01T12:00:00Z.
toml::date_time toml_time(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return {toml::date{tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday},
          toml::time{tm.tm_hour, tm.tm_min, tm.tm_sec}, toml::time_offset{}};
}

std::int64_t from_toml_time(const toml::date_time& dt) {
  std::tm tm{};
  tm.tm_year = dt.date.year - 1900;
  tm.tm_mon = dt.date.month - 1;
  tm.tm_mday = dt.date.day;
  tm.tm_hour = dt.time.hour;
  tm.tm_min = dt.time.minute;
  tm.tm_sec = dt.time.second;
  std::int64_t t = timegm(&tm);
  if (dt.offset) t -= std::int64_t{dt.offset->minutes} * 60;
  return t;
}

constexpr std::int64_t max_created = 253402300799;  // 9999-12-31T23:59:59Z

// One [[token]] table; `what` names it in errors ("tokens.toml:12:1: token 3: ...").
token_entry parse_entry(const toml::table& t, const std::string& what) {
  auto fail = [&](const toml::node& n, const std::string& message) -> token_file_error {
    return token_file_error(what + ", line " + std::to_string(n.source().begin.line) + ": " +
                            message);
  };
  token_entry e;
  for (auto& [key, value] : t) {
    std::string_view k = key.str();
    if (k == "id") {
      auto s = value.value<std::string>();
      if (!value.is_string() || s->size() < 4 || s->size() > 32 || !lower_hex(*s))
        throw fail(value, "id must be 4 to 32 lowercase hex digits");
      e.id = *s;
    } else if (k == "label") {
      auto s = value.value<std::string>();
      if (!value.is_string() || s->size() > max_label_size || !printable(*s))
        throw fail(value, "label must be text of at most 64 printable characters");
      e.label = *s;
    } else if (k == "sha256") {
      auto s = value.value<std::string>();
      if (!value.is_string() || s->size() != 64 || !lower_hex(*s))
        throw fail(value, "sha256 must be 64 lowercase hex digits (the token's SHA-256)");
      e.sha256 = *s;
    } else if (k == "names") {
      auto* a = value.as_array();
      if (!a || a->empty() || a->size() > max_patterns_per_token)
        throw fail(value, "names must be a list of 1 to 64 patterns, such as [\"ci-*\"]");
      e.scope.names.clear();
      for (auto& item : *a) {
        auto s = item.value<std::string>();
        if (!item.is_string() || !valid_name_pattern(*s))
          throw fail(item,
                     "a name pattern is 1-63 lowercase letters, digits, '-', '_', '.' or '*'");
        e.scope.names.push_back(*s);
      }
    } else if (k == "ports") {
      auto* a = value.as_array();
      if (!a || a->empty() || a->size() > max_patterns_per_token)
        throw fail(value, "ports must be a list of 1 to 64 ranges, such as [\"20000-20099\"]");
      for (auto& item : *a) {
        std::optional<port_range> r;
        if (item.is_string()) r = parse_port_span(*item.value<std::string>());
        if (item.is_integer()) {
          auto n = *item.value<std::int64_t>();
          if (n > 0 && n <= 65535)
            r = port_range{static_cast<std::uint16_t>(n), static_cast<std::uint16_t>(n)};
        }
        if (!r) throw fail(item, "a port range is \"FIRST-LAST\" or one port, 1 to 65535");
        e.scope.ports.push_back(*r);
      }
    } else if (k == "max_services") {
      auto n = value.value<std::int64_t>();
      if (!value.is_integer() || *n < 0 || *n > 1000000)
        throw fail(value, "max_services must be a whole number from 0 (unlimited) to 1000000");
      e.scope.max_services = static_cast<std::uint32_t>(*n);
    } else if (k == "bandwidth") {
      std::optional<std::uint64_t> rate;
      if (value.is_string()) rate = parse_rate(*value.value<std::string>());
      if (value.is_integer() && *value.value<std::int64_t>() >= 0)
        rate = parse_rate(std::to_string(*value.value<std::int64_t>()));
      if (!rate)
        throw fail(value, "bandwidth is bytes per second with an optional k, M or G: \"10M\"");
      e.scope.bandwidth = *rate;
    } else if (k == "created") {
      if (auto* dt = value.as_date_time()) {
        e.created = from_toml_time(dt->get());
      } else if (value.is_integer()) {
        e.created = *value.value<std::int64_t>();
      }
      if (e.created < 0 || e.created > max_created || !(value.is_date_time() || value.is_integer()))
        throw fail(value, "created must be a date and time, such as 2024-05-01T12:00:00Z");
    } else {
      throw fail(value, "unknown key '" + std::string(k).substr(0, 64) + "'");
    }
  }
  if (e.sha256.empty()) throw token_file_error(what + ": has no sha256");
  if (e.id.empty()) e.id = e.sha256.substr(0, 12);
  return e;
}

}  // namespace

std::string token_id(std::string_view token) {
  return hex(sha256(token)).substr(0, 12);
}

token_file parse_token_file(std::string_view text, std::string_view origin) {
  if (text.size() > max_token_file_size)
    throw token_file_error(std::string(origin) + ": larger than 1 MiB");
  if (auto problem = toml_text_problem(text))
    throw token_file_error(std::string(origin) + ": " + *problem);
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw token_file_error(where(origin, e.source()) + ": " + std::string(e.description()));
  }
  token_file out;
  std::set<std::string> ids, hashes;
  for (auto& [key, value] : root) {
    if (key.str() == "revoked_agent_token") {
      auto s = value.value<std::string>();
      if (!value.is_string() || s->size() > 32 || !lower_hex(*s))
        throw token_file_error(where(origin, value.source()) +
                               ": revoked_agent_token must be a token id (hex digits)");
      out.revoked_agent_token = *s;
      continue;
    }
    if (key.str() != "token")
      throw token_file_error(where(origin, key.source()) + ": unknown key '" +
                             std::string(key.str()).substr(0, 64) + "'");
    auto* tables = value.as_array();
    if (!tables)
      throw token_file_error(where(origin, value.source()) +
                             ": tokens are written as [[token]] tables");
    if (tables->size() > max_token_entries)
      throw token_file_error(std::string(origin) + ": more than " +
                             std::to_string(max_token_entries) + " tokens");
    for (std::size_t i = 0; i < tables->size(); ++i) {
      auto& item = (*tables)[i];
      std::string what = where(origin, item.source()) + ": token " + std::to_string(i + 1);
      auto* t = item.as_table();
      if (!t) throw token_file_error(what + ": must be a table");
      auto e = parse_entry(*t, what);
      if (!ids.insert(e.id).second)
        throw token_file_error(what + ": id " + e.id + " appears twice");
      if (!hashes.insert(e.sha256).second)
        throw token_file_error(what + ": the same token appears twice");
      out.tokens.push_back(std::move(e));
    }
  }
  return out;
}

// Strings are written in double quotes with escapes for anything but printable ASCII:
// parse_token_file, behind its ASCII guard, reads the result back (tests round-trip it).
std::string format_token_file(const token_file& file) {
  toml::table root;
  if (!file.revoked_agent_token.empty())
    root.insert("revoked_agent_token", file.revoked_agent_token);
  toml::array tokens;
  for (auto& e : file.tokens) {
    toml::table t;
    t.insert("id", e.id);
    t.insert("label", e.label);
    t.insert("sha256", e.sha256);
    toml::array names;
    for (auto& n : e.scope.names) names.push_back(n);
    t.insert("names", std::move(names));
    if (!e.scope.ports.empty()) {
      toml::array ports;
      for (auto& p : e.scope.ports) ports.push_back(format_port_span(p));
      t.insert("ports", std::move(ports));
    }
    t.insert("max_services", std::int64_t{e.scope.max_services});
    t.insert("bandwidth", format_rate(e.scope.bandwidth));
    t.insert("created", toml_time(e.created));
    tokens.push_back(std::move(t));
  }
  if (!tokens.empty()) root.insert("token", std::move(tokens));

  constexpr auto flags =
      toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings &
      ~toml::format_flags::allow_unicode_strings & ~toml::format_flags::allow_real_tabs_in_strings;
  std::ostringstream out;
  out << "# Agent tokens this relay accepts besides agent.token, managed with\n"
         "# `burrow relay token add|list|revoke`. Only each token's SHA-256 is kept here.\n";
  if (!root.empty()) out << "\n" << toml::toml_formatter(root, flags) << "\n";
  return out.str();
}

token_file load_token_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_token_file_size)
    throw token_file_error(path.string() + ": larger than 1 MiB");
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    throw token_file_error(e.what());
  }
  return parse_token_file(text, path.string());
}

void save_token_file(const std::filesystem::path& path, const token_file& file) {
  write_private_file(path, format_token_file(file));
}

}  // namespace burrow::relay
