// Control messages of the link protocol: small JSON objects carried in control frames (stream 0)
// and as the metadata of open frames. Pure encode and decode, bounded in size and depth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/tunnel_kind.hpp"

namespace burrow::proto {

// First message on a link, from the side that dialled it.
struct hello {
  std::vector<std::uint32_t> versions;  // protocol versions the dialer speaks
  std::string role;                     // "agent" or "visitor" (`burrow connect`)
  std::string token;                    // the agent token; empty for visitors; never logged
  std::string session;                  // random id of the agent process, the same on every link
  std::uint32_t link_index = 0;
  std::string software;  // "burrow/0.1.0", for logs
  // "none" asks for an unencrypted link after the welcome; empty (or "tls") keeps TLS.
  std::string link_encryption{};
  // The dialer can send and take sealed frames: end-to-end encrypted streams' frames outside the
  // link's TLS (docs/protocol.md, section 4b).
  bool sealed_frames = false;
  // The dialer can protect the link's records itself after the welcome, with keys from the TLS
  // session's exporter (docs/protocol.md, section 4c).
  bool own_records = false;
};

// The relay's answer to a good hello: the version chosen and the limits of this link.
struct welcome {
  std::uint32_t version = 0;
  std::uint32_t max_frame = 0;
  std::uint32_t initial_window = 0;
  std::uint32_t max_streams = 0;
  std::uint32_t ping_interval_ms = 0;
  std::uint32_t ping_timeout_ms = 0;
  std::string link_encryption{};  // "none" when the relay granted hello's request; else empty
  bool sealed_frames = false;     // the relay agrees to sealed frames on this link
  bool own_records = false;       // the relay agrees to the link's own records
};

// A share URL's access rules as an inspect-mode relay enforces them: digests and crypt hashes
// only, never a password, token or header value in the clear.
struct access_spec {
  struct basic_entry {
    std::string user;
    std::string secret;  // hex SHA-256 of the password, or its crypt(3) hash when `hashed`
    bool hashed = false;
  };
  struct header_entry {
    std::string name;
    std::string value_sha256;  // hex
  };
  std::vector<basic_entry> basic;
  std::vector<std::string> bearer_sha256;  // hex, one per token
  std::vector<header_entry> headers;
  std::vector<std::string> allow_ip;  // CIDR text
  bool empty() const {
    return basic.empty() && bearer_sha256.empty() && headers.empty() && allow_ip.empty();
  }
};

struct service_spec {
  std::string name;
  tunnel_kind kind = tunnel_kind::tcp_port;
  std::uint16_t remote_port = 0;  // 0 = any free port from the relay's range
  // Hex SHA-256 of the visitor token the relay asks of visitors; empty: no token needed.
  std::string visitor_token_sha256 = {};
  // Blind share URLs: the relay's HTTP listener forwards plain requests instead of redirecting
  // them to HTTPS.
  bool plain_http = false;
  access_spec access = {};  // inspect mode: the rules the relay enforces
  // Decoded from a register message that asked for a kind or mode this version does not know
  // (`kind` is then meaningless): the refusal's code and what was asked, for its message.
  struct unsupported_kind {
    std::string code;  // "unsupported_kind" or "unsupported_mode"
    std::string asked;
  };
  std::optional<unsupported_kind> unsupported = {};
};

struct register_services {
  std::vector<service_spec> services;
};

// Per-service outcome of a registration. Refusals carry a code and a message for the user.
struct service_result {
  std::string name;
  bool ok = false;
  std::uint16_t remote_port = 0;
  std::string public_address;  // "host:port" visitors use
  std::string code;            // "port_in_use", "port_not_allowed", ...
  std::string message;
};

struct registered {
  std::vector<service_result> services;
};

// The answer refusing `spec`, with a machine-readable code and a message for people.
inline service_result refused(const service_spec& spec, std::string code, std::string message) {
  service_result r;
  r.name = spec.name;
  r.remote_port = spec.remote_port;
  r.code = std::move(code);
  r.message = std::move(message);
  return r;
}

// A link-level refusal (bad token, unsupported version, ...); the sender closes after it.
struct link_error {
  std::string code;
  std::string message;
};

// Agent to relay: a certificate for a share URL this agent holds, from a PKCS#10 request made
// with the agent's own key (the key never leaves the agent).
struct cert_request {
  std::string name;
  std::string csr;  // PEM
};

// Relay to agent: the answer to a cert_request.
struct certificate {
  std::string name;
  bool ok = false;
  std::string cert;  // PEM leaf for NAME.DOMAIN, signed by the relay's CA
  std::string ca;    // PEM of that CA, for the agent's log and visitors' --cacert
  std::string code;
  std::string message;
};

// Agent to relay: these services are done (a share URL expired); their names are free at once.
struct unregister {
  std::vector<std::string> names;
};

// Relay to agent: a newer agent process with the same token took these services over; this one
// no longer serves them and must not claim them again.
struct replaced {
  std::vector<std::string> names;
  std::string by;  // the first 8 hex digits of the newer agent's session, for logs
};

using control_message = std::variant<hello, welcome, register_services, registered, link_error,
                                     cert_request, certificate, unregister, replaced>;

std::string encode_control(const control_message& m);

struct control_decode {
  std::optional<control_message> message;
  std::string error;          // why decoding failed, safe to log (never echoes secrets)
  bool unknown_type = false;  // well-formed, but a type this version does not know: skip it
};
control_decode decode_control(std::string_view json);

// Metadata of an open frame: which service, and who the visitor is.
struct open_metadata {
  std::string service;
  std::string visitor_address;  // IP text
  std::uint16_t visitor_port = 0;
  std::string relay_address;  // the public address the visitor reached
  std::uint16_t relay_port = 0;
  // From `burrow connect` to the relay only: the visitor token, checked by the relay and never
  // passed on to the agent or logged.
  std::string visitor_token = {};
  // Share URLs: whether the stream carries the visitor's own bytes, or HTTP/1.1 in the clear
  // because the relay ended TLS (inspect mode) or the visitor came over plain HTTP.
  visitor_scheme scheme = visitor_scheme::own_tls;
  // The stream's bytes are encrypted end to end by its two ends (burrow connect and the agent,
  // or a share URL's visitor and the agent or the service): on a link with sealed frames its
  // data and window frames travel outside the link's TLS.
  bool sealed = false;
  // End to end (docs/protocol.md, section 6c): "new" opens a session stream; a session's id (32
  // hex digits) with a stream number (at least 1) opens a stream keyed from that session.
  std::string e2ee_session = {};
  std::uint64_t e2ee_stream = 0;
};

std::string encode_open(const open_metadata& m);
std::optional<open_metadata> decode_open(std::string_view json);

}  // namespace burrow::proto
