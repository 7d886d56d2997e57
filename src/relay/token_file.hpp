// The relay's tokens file (tokens.toml): the agent tokens it accepts besides agent.token, each
// stored as its SHA-256, never in the clear, with its scope. A pure parser and writer, plus
// loading and atomic saving.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "relay/token_scope.hpp"

namespace burrow::relay {

inline constexpr std::size_t max_token_file_size = 1024 * 1024;
inline constexpr std::size_t max_token_entries = 4096;
inline constexpr std::size_t max_patterns_per_token = 64;
inline constexpr std::size_t max_label_size = 64;

struct token_file_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct token_entry {
  std::string id;      // public: the first 12 hex digits of sha256, shown in logs and lists
  std::string label;   // the operator's note: who or what the token is for
  std::string sha256;  // 64 lowercase hex digits of the token's SHA-256
  token_scope scope;
  std::int64_t created = 0;  // Unix seconds
  bool operator==(const token_entry&) const = default;
};

struct token_file {
  // The id of an agent.token that `burrow relay token revoke` disabled (empty: none). A new
  // agent.token has another id, so replacing the file brings the built-in token back.
  std::string revoked_agent_token;
  std::vector<token_entry> tokens;
  bool operator==(const token_file&) const = default;
};

// The public id of a token: the first 12 hex digits of its SHA-256.
std::string token_id(std::string_view token);

// Throws token_file_error naming `origin` (and the entry) for anything malformed.
token_file parse_token_file(std::string_view text, std::string_view origin);
std::string format_token_file(const token_file& file);

// A missing file holds no tokens.
token_file load_token_file(const std::filesystem::path& path);
// Replaces the file atomically, mode 0600.
void save_token_file(const std::filesystem::path& path, const token_file& file);

}  // namespace burrow::relay
