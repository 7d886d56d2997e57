// The agent's end-to-end identity: the certificate that visitors pin, kept in the agent's state
// directory so its fingerprint survives restarts, or given by the user as two files.
#pragma once

#include "tls/certs.hpp"

#include <filesystem>

namespace burrow::e2ee {

// Loads e2ee.crt and e2ee.key from `state_dir`, creating the directory (0700) and, on first
// use, a self-signed ECDSA P-256 certificate ("burrow agent", valid 10 years; files 0600).
// Existing files are never replaced: a missing half, an unreadable or corrupt file, or a key that
// does not match gives std::runtime_error naming the file.
tls::key_pair load_or_create_identity(const std::filesystem::path& state_dir);

// The user's own certificate and key (--e2ee-cert/--e2ee-key). Throws std::runtime_error naming
// the file that cannot be read or parsed, or when the key does not belong to the certificate.
tls::key_pair load_identity_files(const std::filesystem::path& cert_path,
                                  const std::filesystem::path& key_path);

// $XDG_STATE_HOME/burrow/agent, else $HOME/.local/state/burrow/agent, else ./.burrow-agent
std::filesystem::path default_agent_state_dir();

}  // namespace burrow::e2ee
