// The exchange that starts a link, before its reader and writer run: the dialer sends hello,
// the relay answers welcome or error. Each call is one control frame; callers add deadlines.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "link/link.hpp"
#include "proto/control.hpp"

namespace burrow::link {

boost::asio::awaitable<boost::system::error_code> write_control_frame(tls_stream& socket,
                                                                      proto::control_message m);

struct control_read {
  std::optional<proto::control_message> message;
  std::string error;  // transport or protocol failure, safe to log
};
boost::asio::awaitable<control_read> read_control_frame(tls_stream& socket);

// The ALPN protocol the handshake settled on ("" when none).
std::string negotiated_protocol(tls_stream& socket);

}  // namespace burrow::link
