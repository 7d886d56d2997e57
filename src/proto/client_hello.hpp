// TLS ClientHello peek: the SNI, ALPN and versions a visitor offers, read from the first bytes of
// a connection without decrypting anything, so the relay can route by name. Pure, no I/O;
// follows RFC 8446 (sections 4.1.2, 4.2, 5.1), RFC 6066 (section 3) and RFC 7301.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace burrow::proto {

inline constexpr std::size_t tls_record_header_size = 5;
inline constexpr std::size_t tls_max_record_payload = 16384;  // a plaintext record, 2^14
inline constexpr std::size_t default_max_client_hello = 16 * 1024;
inline constexpr std::size_t max_alpn_protocols = 32;

enum class hello_parse { ok, incomplete, invalid };

// Why a ClientHello was rejected; compare these, not the reason text.
enum class hello_error : std::uint8_t {
  none,
  sslv2,                // an SSLv2-style hello (first byte has the high bit set)
  not_handshake,        // a record that is not a handshake (content type 22): not TLS at all
  bad_record_length,    // an empty record, or one over 16384 bytes
  not_client_hello,     // the first handshake message is not a ClientHello (type 1)
  too_large,            // the ClientHello is longer than the caller's bound
  bad_length,           // a length runs past what contains it, or leaves bytes over
  bad_field,            // long session id, odd or empty cipher suites, no compression method
  bad_version,          // the ClientHello's own version is not TLS (SSL 3.0 or older, 4.x)
  duplicate_extension,  // the same extension type twice
  bad_server_name,      // malformed SNI, or a host name that is not a DNS name
  bad_alpn,             // malformed ALPN, or more than max_alpn_protocols entries
  bad_supported_versions,
};
std::string_view to_string(hello_error e);

struct client_hello_result {
  hello_parse status = hello_parse::incomplete;
  hello_error error = hello_error::none;
  std::string reason;        // invalid: one phrase for logs; never quotes input bytes
  std::size_t need = 0;      // incomplete: at least this many more bytes before it can be ok
  std::size_t consumed = 0;  // ok: the input bytes of the record(s) that carry the ClientHello

  std::string server_name;           // lowercase, no trailing dot; "" when the client sent no SNI
  std::vector<std::string> alpn;     // as offered, in order; empty when no ALPN extension
  std::uint16_t record_version = 0;  // of the first record, as sent (it means nothing)
  std::uint16_t legacy_version = 0;  // the ClientHello's own version field (0x0303 for TLS 1.3)
  bool offers_tls13 = false;         // supported_versions lists 0x0304
};

// Parses the ClientHello at the front of `in`, all the bytes read so far from a new connection.
// Call again with the longer prefix while it says incomplete: every prefix of a valid hello is
// incomplete, and invalid is final. The hello may be split over records of any size up to
// 16384; `max_hello` bounds the handshake message's length field. Once 6 * (4 + max_hello)
// bytes are in (a hello of max_hello bytes sent in 1-byte records) the answer is never
// incomplete, so that is the most a caller ever needs to buffer.
client_hello_result parse_client_hello(std::span<const std::uint8_t> in,
                                       std::size_t max_hello = default_max_client_hello);

// The name lowercased and without a trailing dot, if it is a DNS host name: 1..253 characters,
// labels of 1..63 [a-z0-9-] not starting or ending with '-', and not an IP address literal.
std::optional<std::string> canonical_host_name(std::string_view name);

// What a new connection speaks, from its first bytes: TLS starts with a handshake record (22),
// plain HTTP/1 with an upper-case method token and a space ("GET ", "PRI " for h2c).
enum class connection_kind { incomplete, tls, http, other };
connection_kind sniff_connection(std::span<const std::uint8_t> in);

}  // namespace burrow::proto
