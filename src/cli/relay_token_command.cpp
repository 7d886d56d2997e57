// `burrow relay token add|list|revoke`: edit the relay's tokens file. A running relay notices
// the change within a second (or on SIGHUP); only each token's SHA-256 is ever written down.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "cli/options.hpp"
#include "core/secret.hpp"
#include "relay/relay_settings.hpp"
#include "relay/token_file.hpp"

namespace burrow::cli {

namespace {

namespace fs = std::filesystem;

// The id of the relay's built-in agent.token, or empty if it has none yet.
std::string agent_token_id(const relay::relay_config& c) {
  auto path = c.state_dir / "agent.token";
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  auto text = read_file(path);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text.empty() ? std::string() : relay::token_id(text);
}

std::string utc_text(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

void ensure_parent(const fs::path& file) {
  auto dir = file.parent_path();
  if (dir.empty() || fs::exists(dir)) return;
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
}

}  // namespace

int relay_token_add(const layered_settings& s, const token_add_request& req) {
  auto config = relay::make_relay_config(s);
  relay::token_entry e;
  if (req.label.size() > relay::max_label_size ||
      !std::all_of(req.label.begin(), req.label.end(),
                   [](char c) { return c >= 0x20 && c < 0x7f; }))
    throw config_error("--label is at most 64 printable ASCII characters");
  e.label = req.label;
  if (!req.names.empty()) {
    if (req.names.size() > relay::max_patterns_per_token)
      throw config_error("at most 64 --names patterns");
    e.scope.names.clear();
    for (auto& n : req.names) {
      if (!relay::valid_name_pattern(n))
        throw config_error("--names '" + n.substr(0, 64) +
                           "': a pattern is 1-63 lowercase letters, digits, '-', '_', '.' or '*'");
      e.scope.names.push_back(n);
    }
  }
  if (req.ports.size() > relay::max_patterns_per_token)
    throw config_error("at most 64 --ports ranges");
  for (auto& p : req.ports) {
    auto r = relay::parse_port_span(p);
    if (!r) throw config_error("--ports '" + p.substr(0, 32) + "' is not FIRST-LAST or one port");
    e.scope.ports.push_back(*r);
  }
  if (!req.max_services.empty()) {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(req.max_services.data(),
                                     req.max_services.data() + req.max_services.size(), n);
    if (ec != std::errc() || end != req.max_services.data() + req.max_services.size() ||
        n > 1000000)
      throw config_error("--max-services must be a whole number from 0 (unlimited) to 1000000");
    e.scope.max_services = static_cast<std::uint32_t>(n);
  }
  if (!req.bandwidth.empty()) {
    auto rate = relay::parse_rate(req.bandwidth);
    if (!rate)
      throw config_error("--bandwidth '" + req.bandwidth.substr(0, 32) +
                         "' is bytes per second with an optional k, M or G, such as 10M");
    e.scope.bandwidth = *rate;
  }

  auto file = relay::load_token_file(config.tokens_file);
  if (file.tokens.size() >= relay::max_token_entries)
    throw config_error(config.tokens_file.string() + " already holds the most tokens it may");
  std::string token = random_token();
  e.sha256 = hex(sha256(token));
  e.id = e.sha256.substr(0, 12);
  e.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  file.tokens.push_back(e);
  ensure_parent(config.tokens_file);
  relay::save_token_file(config.tokens_file, file);
  std::fputs(fmt::format("token {} added{}: {}\n"
                         "the token is shown once; {} keeps only its SHA-256:\n{}\n"
                         "agents present it with --token or BURROW_TOKEN; a running relay "
                         "accepts it within a second\n",
                         e.id, e.label.empty() ? "" : " (" + e.label + ")",
                         relay::describe(e.scope), config.tokens_file.string(), token)
                 .c_str(),
             stdout);
  return 0;
}

int relay_token_list(const layered_settings& s) {
  auto config = relay::make_relay_config(s);
  auto file = relay::load_token_file(config.tokens_file);
  std::string out = fmt::format("{:<13} {:<20} {:<21} {}\n", "ID", "LABEL", "CREATED", "SCOPE");
  if (auto id = agent_token_id(config); !id.empty())
    out += fmt::format("{:<13} {:<20} {:<21} {}\n", id, "default (agent.token)", "-",
                       file.revoked_agent_token == id ? "revoked" : "everything");
  for (auto& e : file.tokens)
    out += fmt::format("{:<13} {:<20} {:<21} {}\n", e.id, e.label.empty() ? "-" : e.label,
                       utc_text(e.created), relay::describe(e.scope));
  std::fputs(out.c_str(), stdout);
  return 0;
}

int relay_token_revoke(const layered_settings& s, const std::string& id) {
  auto config = relay::make_relay_config(s);
  auto file = relay::load_token_file(config.tokens_file);
  auto builtin = agent_token_id(config);
  if (!builtin.empty() && (id == "default" || id == builtin)) {
    file.revoked_agent_token = builtin;
  } else {
    auto gone = std::erase_if(file.tokens, [&](const relay::token_entry& e) { return e.id == id; });
    if (gone == 0)
      throw config_error("no token with id '" + id.substr(0, 32) + "' in " +
                         config.tokens_file.string());
  }
  ensure_parent(config.tokens_file);
  relay::save_token_file(config.tokens_file, file);
  std::fputs(fmt::format("token {} revoked; a running relay closes its links within a second\n",
                         id == "default" ? builtin : id)
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace burrow::cli
