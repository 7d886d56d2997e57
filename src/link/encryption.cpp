// Link encryption names.
#include "link/encryption.hpp"

#include "core/settings.hpp"

namespace burrow::link {

std::optional<link_encryption> parse_link_encryption(std::string_view text) {
  if (text == "tls") return link_encryption::tls;
  if (text == "full") return link_encryption::full;
  if (text == "none") return link_encryption::none;
  return std::nullopt;
}

std::string_view to_string(link_encryption e) {
  switch (e) {
    case link_encryption::tls:
      return "tls";
    case link_encryption::full:
      return "full";
    case link_encryption::none:
      return "none";
  }
  return "tls";
}

link_encryption parse_link_encryption_setting(const layered_settings& s) {
  auto text = s.text_or("link-encryption", "tls");
  auto e = parse_link_encryption(text);
  if (!e)
    throw config_error("invalid value '" + text + "' for " + s.origin("link-encryption") +
                       ": expected tls, full or none");
  return *e;
}

}  // namespace burrow::link
