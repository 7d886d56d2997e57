// What a link's TLS covers. Every link starts with TLS (the relay's identity, the token and the
// hello are always protected). After the welcome:
//   tls  (the default): frames go through the link's TLS, except the data and window frames of
//        streams that are encrypted end to end already (burrow connect, blind and passthrough
//        share URLs), which travel next to the records as sealed frames instead of being
//        encrypted twice (docs/protocol.md, section 4b);
//   full: every frame goes through the link's TLS;
//   none: frames travel in the clear on the same TCP connection. For private networks only,
//        never the default.
// As a setting it says what a side wants or allows; on a link, what hello and welcome agreed.
#pragma once

#include <optional>
#include <string_view>

namespace burrow {
class layered_settings;
}

namespace burrow::link {

enum class link_encryption { tls, full, none };

// "tls", "full" or "none"; nullopt for anything else.
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
