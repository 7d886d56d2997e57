// Agent token authentication and reloading of tokens.toml.
#include "relay/access_tokens.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "core/secret.hpp"
#include "relay/token_file.hpp"

namespace burrow::relay {

bool token_grant::add_link(const std::shared_ptr<link::link>& l) {
  std::lock_guard lock(mutex_);
  if (revoked()) return false;
  std::erase_if(links_, [](auto& w) { return w.expired(); });
  links_.push_back(l);
  return true;
}

std::vector<std::shared_ptr<link::link>> token_grant::links() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<link::link>> out;
  for (auto& w : links_)
    if (auto l = w.lock()) out.push_back(std::move(l));
  return out;
}

access_tokens::access_tokens(std::string_view agent_token, std::filesystem::path file)
    : agent_sha256_(hex(sha256(agent_token))),
      agent_id_(agent_sha256_.substr(0, 12)),
      path_(std::move(file)) {}

access_tokens::file_stamp access_tokens::stamp() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return {};
  return {true, static_cast<long long>(st.st_size),
          static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec,
          static_cast<long long>(st.st_ino)};
}

std::map<std::string, access_tokens::held> access_tokens::entries(const token_file& file) const {
  std::map<std::string, held> next;
  if (file.revoked_agent_token != agent_id_)
    next[agent_id_] = {agent_sha256_, "default", token_scope{}, nullptr};
  for (auto& e : file.tokens) {
    if (next.count(e.id) || e.sha256 == agent_sha256_) continue;  // agent.token comes first
    next[e.id] = {e.sha256, e.label, e.scope, nullptr};
  }
  return next;
}

void access_tokens::load() {
  std::lock_guard lock(mutex_);
  stamp_ = stamp();
  apply(entries(load_token_file(path_)));
}

std::shared_ptr<token_grant> access_tokens::authenticate(std::string_view presented) const {
  const std::string digest = hex(sha256(presented));
  std::lock_guard lock(mutex_);
  std::shared_ptr<token_grant> found;
  for (auto& [id, h] : tokens_)
    if (constant_time_equal(digest, h.sha256)) found = h.grant;  // no early exit
  return found;
}

std::optional<token_scope> access_tokens::scope(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return std::nullopt;
  return it->second.scope;
}

void access_tokens::set_path(std::filesystem::path file) {
  std::lock_guard lock(mutex_);
  if (file == path_) return;
  path_ = std::move(file);
  stamp_.reset();
}

std::filesystem::path access_tokens::path() const {
  std::lock_guard lock(mutex_);
  return path_;
}

access_tokens::changes access_tokens::reload(bool force) {
  std::lock_guard lock(mutex_);
  auto now = stamp();
  if (!force && stamp_ && *stamp_ == now) return {};
  stamp_ = now;
  token_file file;
  try {
    file = load_token_file(path_);
  } catch (const std::exception& e) {
    spdlog::error("tokens not reloaded; the relay keeps the tokens it had: {}", e.what());
    return {};
  }
  return apply(entries(file));
}

access_tokens::changes access_tokens::apply(const std::map<std::string, held>& next) {
  changes out;
  std::map<std::string, held, std::less<>> kept;
  for (auto& [id, h] : next) {
    auto it = tokens_.find(id);
    held n = h;
    if (it != tokens_.end() && it->second.sha256 == h.sha256) {
      n.grant = it->second.grant;
      if (!(it->second.scope == h.scope)) {
        out.rescoped.push_back(id);
        spdlog::info("token {} ({}): scope now {}", id, n.grant->label(), describe(h.scope));
      }
    } else {
      n.grant = std::make_shared<token_grant>(id, h.label);
      spdlog::info("token {} ({}) accepted: {}", id, h.label, describe(h.scope));
    }
    n.grant->limiter()->set_rate(h.scope.bandwidth);
    kept.emplace(id, std::move(n));
  }
  for (auto& [id, h] : tokens_) {
    auto it = kept.find(id);
    if (it != kept.end() && it->second.grant == h.grant) continue;
    h.grant->revoke();
    out.removed.push_back(h.grant);
  }
  tokens_ = std::move(kept);
  return out;
}

}  // namespace burrow::relay
