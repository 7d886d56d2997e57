// Whether a link's frames are encrypted. Every link starts with TLS (the relay's identity, the
// token and the hello are always protected); with `none`, agreed in hello and welcome, the
// frames after the welcome travel in the clear on the same TCP connection. For private networks
// only, never the default.
#pragma once

#include <optional>
#include <string_view>

namespace burrow {
class layered_settings;
}

namespace burrow::link {

enum class link_encryption { tls, none };

// "tls" or "none"; nullopt for anything else.
std::optional<link_encryption> parse_link_encryption(std::string_view text);
std::string_view to_string(link_encryption e);
// The "link-encryption" setting (tls when unset); throws config_error naming its origin.
link_encryption parse_link_encryption_setting(const layered_settings& s);

// The warning both ends print when links may go unencrypted.
inline constexpr std::string_view unencrypted_link_warning =
    "--link-encryption none: after the TLS handshake and hello, tunnel traffic between agent and "
    "relay crosses the network UNENCRYPTED and unauthenticated; anyone on the path can read and "
    "change it. Use it only on a network you trust (loopback, a private LAN, a VPN)";

}  // namespace burrow::link
