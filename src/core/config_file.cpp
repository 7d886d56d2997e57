// TOML configuration files through toml++, flattened into settings layers.
#include "core/config_file.hpp"

#include "core/toml.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/toml_text.hpp"

namespace burrow {

namespace {

std::string where(std::string_view origin, const toml::source_region& r) {
  return std::string(origin) + ":" + std::to_string(r.begin.line) + ":" +
         std::to_string(r.begin.column);
}

// A scalar as text; arrays of scalars joined by newlines (see split_list).
std::string scalar_text(const toml::node& n, const std::string& key, std::string_view origin) {
  if (auto s = n.value<std::string>(); s && n.is_string()) return *s;
  if (n.is_integer()) return std::to_string(*n.value<std::int64_t>());
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_floating_point()) return std::to_string(*n.value<double>());
  if (auto* a = n.as_array()) {
    std::string out;
    for (auto& item : *a) {
      if (item.is_array() || item.is_table())
        throw config_error(where(origin, item.source()) + ": '" + key + "' must hold plain values");
      if (!out.empty()) out += "\n";
      out += scalar_text(item, key, origin);
    }
    return out;
  }
  throw config_error(where(origin, n.source()) + ": '" + key + "' must be a plain value");
}

settings_layer flatten(const toml::table& t, const std::vector<std::string>& keys,
                       std::string_view origin, std::string_view context) {
  settings_layer out;
  for (auto& [k, v] : t) {
    std::string key = setting_key(k.str());
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw config_error(where(origin, k.source()) + ": unknown setting '" + std::string(k.str()) +
                         "'" + std::string(context));
    out[key] = scalar_text(v, key, origin);
  }
  return out;
}

}  // namespace

config_file parse_config_file(std::string_view text, std::string_view origin,
                              const std::vector<std::string>& keys,
                              const std::vector<std::string>& service_keys,
                              std::string_view table) {
  const std::string name(table), tables = "[[" + name + "]]";
  if (text.size() > max_config_file_size)
    throw config_error(std::string(origin) + ": larger than 1 MiB");
  if (auto problem = toml_text_problem(text))
    throw config_error(std::string(origin) + ": " + *problem);
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    throw config_error(where(origin, e.source()) + ": " + std::string(e.description()));
  }
  config_file out;
  toml::table top;
  for (auto& [k, v] : root) {
    if (k.str() == name || k.str() == name + "s") {
      auto* arr = v.as_array();
      if (service_keys.empty())
        throw config_error(where(origin, v.source()) + ": " + tables +
                           " tables belong in an agent's file (burrow up -c FILE)");
      if (!arr)
        throw config_error(where(origin, v.source()) + ": " + name + "s are written as " + tables +
                           " tables");
      for (auto& item : *arr) {
        auto* t = item.as_table();
        if (!t)
          throw config_error(where(origin, item.source()) + ": a " + name + " must be a table");
        out.services.push_back(flatten(*t, service_keys, origin, " in " + tables));
      }
      continue;
    }
    top.insert(k, v);
  }
  out.settings = flatten(top, keys, origin, "");
  return out;
}

config_file load_config_file(const std::filesystem::path& path,
                             const std::vector<std::string>& keys,
                             const std::vector<std::string>& service_keys, std::string_view table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("cannot read config file " + path.string());
  std::string text;
  char chunk[16384];
  while (in && text.size() <= max_config_file_size) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  return parse_config_file(text, path.string(), keys, service_keys, table);
}

}  // namespace burrow
