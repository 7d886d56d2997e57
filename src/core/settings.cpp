// Layered settings and their typed, self-explaining getters.
#include "core/settings.hpp"

#include <charconv>

#include "core/duration.hpp"

namespace burrow {

std::vector<std::string> split_list(std::string_view text) {
  // Repeated flags and TOML arrays arrive joined by newlines, so items may hold commas; a
  // hand-written value (an environment variable) may use commas instead.
  char separator = text.find('\n') != std::string_view::npos ? '\n' : ',';
  std::vector<std::string> out;
  while (!text.empty()) {
    auto cut = text.find(separator);
    auto item = text.substr(0, cut);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\r')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\r')) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (cut == std::string_view::npos) break;
    text.remove_prefix(cut + 1);
  }
  return out;
}

std::string setting_key(std::string_view name) {
  std::string k(name);
  for (auto& c : k)
    if (c == '_') c = '-';
  return k;
}

std::string setting_env_name(std::string_view key) {
  std::string e = "BURROW_";
  for (char c : key)
    e += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return e;
}

settings_layer settings_from_env(const std::vector<std::string>& keys,
                                 const std::function<const char*(const char*)>& getenv) {
  settings_layer out;
  for (auto& k : keys)
    if (const char* v = getenv(setting_env_name(k).c_str()); v && *v) out[k] = v;
  return out;
}

layered_settings::layered_settings(settings_layer flags, settings_layer env, settings_layer file)
    : flags_(std::move(flags)), env_(std::move(env)), file_(std::move(file)) {}

std::optional<std::string> layered_settings::text(const std::string& key) const {
  for (auto* layer : {&flags_, &env_, &file_})
    if (auto it = layer->find(key); it != layer->end()) return it->second;
  return std::nullopt;
}

std::string layered_settings::origin(const std::string& key) const {
  if (flags_.count(key)) return "--" + key;
  if (env_.count(key)) return setting_env_name(key);
  if (file_.count(key)) return "'" + key + "' in the config file";
  return key;
}

std::string layered_settings::text_or(const std::string& key, std::string fallback) const {
  auto t = text(key);
  return t ? *t : std::move(fallback);
}

std::vector<std::string> layered_settings::list_or(const std::string& key,
                                                   std::vector<std::string> fallback) const {
  auto t = text(key);
  if (!t) return fallback;
  return split_list(*t);
}

std::uint64_t layered_settings::number_or(const std::string& key, std::uint64_t fallback,
                                          std::uint64_t min, std::uint64_t max) const {
  auto t = text(key);
  if (!t) return fallback;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (ec != std::errc() || p != t->data() + t->size() || v < min || v > max)
    throw config_error("invalid value '" + *t + "' for " + origin(key) +
                       ": expected a number from " + std::to_string(min) + " to " +
                       std::to_string(max));
  return v;
}

std::chrono::milliseconds layered_settings::duration_or(const std::string& key,
                                                        std::chrono::milliseconds fallback) const {
  auto t = text(key);
  if (!t) return fallback;
  auto d = parse_duration(*t);
  if (!d)
    throw config_error("invalid value '" + *t + "' for " + origin(key) +
                       ": expected a duration such as 500ms, 5s, 2m or 1h");
  return *d;
}

}  // namespace burrow
