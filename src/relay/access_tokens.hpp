// The agent tokens a relay accepts: the built-in agent.token (full scope, label "default") and
// those of tokens.toml, each with its scope, its bandwidth limiter and its open links. Shared by
// every relay thread; the file is re-read when it changes.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "link/rate_limit.hpp"
#include "relay/token_scope.hpp"

namespace burrow::link {
class link;
}

namespace burrow::relay {

struct token_file;

// What an authenticated agent link holds on to: its token's identity, limiter and fate.
class token_grant {
 public:
  token_grant(std::string id, std::string label) : id_(std::move(id)), label_(std::move(label)) {}
  const std::string& id() const { return id_; }
  const std::string& label() const { return label_; }
  const std::shared_ptr<link::rate_limiter>& limiter() const { return limiter_; }
  bool revoked() const { return revoked_.load(); }
  void revoke() { revoked_.store(true); }

  // Remembers a link of this token; false (and not kept) once the token is revoked.
  bool add_link(const std::shared_ptr<link::link>& l);
  std::vector<std::shared_ptr<link::link>> links();

 private:
  std::string id_;
  std::string label_;
  std::shared_ptr<link::rate_limiter> limiter_ = std::make_shared<link::rate_limiter>();
  std::atomic<bool> revoked_{false};
  std::mutex mutex_;
  std::vector<std::weak_ptr<link::link>> links_;
};

class access_tokens {
 public:
  access_tokens(std::string_view agent_token, std::filesystem::path file);

  // Reads the file; throws token_file_error naming the file and entry (the relay's start).
  void load();
  // The grant for a token an agent presented, or null. Every known token is compared, in time
  // independent of which (if any) matches.
  std::shared_ptr<token_grant> authenticate(std::string_view presented) const;
  // A token's scope now; nullopt once it is gone.
  std::optional<token_scope> scope(const std::string& id) const;

  struct changes {
    std::vector<std::shared_ptr<token_grant>> removed;  // already marked revoked
    std::vector<std::string> rescoped;                  // ids whose scope changed
  };
  // Re-reads the file if its size, modification time or inode changed, or always with `force`.
  // A file that does not parse is logged and the tokens stay as they were.
  changes reload(bool force);
  // Another tokens file (SIGHUP with a new `tokens` setting); read at the next reload.
  void set_path(std::filesystem::path file);
  std::filesystem::path path() const;

 private:
  struct held {
    std::string sha256;
    std::string label;
    token_scope scope;
    std::shared_ptr<token_grant> grant;
  };
  struct file_stamp {
    bool exists = false;
    long long size = 0, mtime_ns = 0, inode = 0;
    bool operator==(const file_stamp&) const = default;
  };
  file_stamp stamp() const;
  std::map<std::string, held> entries(const token_file& file) const;
  changes apply(const std::map<std::string, held>& next);

  mutable std::mutex mutex_;
  std::string agent_sha256_, agent_id_;
  std::filesystem::path path_;
  std::optional<file_stamp> stamp_;
  std::map<std::string, held, std::less<>> tokens_;  // by id
};

}  // namespace burrow::relay
