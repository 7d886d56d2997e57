// ClientHello parsing in two passes: the records first (enough to tell incomplete from invalid
// early), then, once the whole message is in, its body read across the record boundaries.
#include "proto/client_hello.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cassert>

#include "core/ascii.hpp"

namespace burrow::proto {
namespace {

constexpr std::uint8_t content_handshake = 22;
constexpr std::uint8_t handshake_client_hello = 1;
constexpr std::size_t handshake_header_size = 4;  // type, 24-bit length

constexpr std::uint16_t ext_server_name = 0;
constexpr std::uint16_t ext_alpn = 16;
constexpr std::uint16_t ext_supported_versions = 43;
constexpr std::uint16_t tls13 = 0x0304;

struct failure {
  hello_error error;
  const char* reason;
};

client_hello_result invalid(hello_error e, std::string reason) {
  client_hello_result r;
  r.status = hello_parse::invalid;
  r.error = e;
  r.reason = std::move(reason);
  return r;
}

client_hello_result invalid(failure f) {
  return invalid(f.error, f.reason);
}

client_hello_result incomplete(std::size_t need) {
  client_hello_result r;
  r.status = hello_parse::incomplete;
  r.need = need;
  return r;
}

std::uint16_t u16_at(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

// Reads the handshake message body out of records already checked by the first pass: they are
// all present and their payloads add up to exactly the message. Every read is bounds-checked by
// the caller against the body's length; the asserts guard that invariant.
class body_reader {
 public:
  body_reader(std::span<const std::uint8_t> records, std::size_t body_length)
      : in_(records), size_(body_length) {
    for (std::size_t i = 0; i < handshake_header_size; ++i) next();
  }

  std::size_t at() const { return at_; }
  std::size_t size() const { return size_; }
  // Are there n more bytes before `end` (an offset in the body, at most size())?
  bool fits(std::size_t n, std::size_t end) const { return n <= end - at_; }

  std::uint8_t u8() {
    assert(at_ < size_);
    ++at_;
    return next();
  }
  std::uint16_t u16() {
    const auto hi = u8();
    return static_cast<std::uint16_t>((hi << 8) | u8());
  }
  void skip(std::size_t n) {
    assert(n <= size_ - at_);
    while (n > 0) {
      enter_record();
      const auto step = std::min(n, left_);
      pos_ += step;
      left_ -= step;
      at_ += step;
      n -= step;
    }
  }
  void append(std::size_t n, std::string& out) {
    for (std::size_t i = 0; i < n; ++i) out += static_cast<char>(u8());
  }

 private:
  void enter_record() {
    while (left_ == 0) {
      assert(pos_ + tls_record_header_size <= in_.size());
      left_ = u16_at(in_.data() + pos_ + 3);
      pos_ += tls_record_header_size;
    }
  }
  std::uint8_t next() {
    enter_record();
    assert(pos_ < in_.size());
    --left_;
    return in_[pos_++];
  }

  std::span<const std::uint8_t> in_;
  std::size_t size_;
  std::size_t at_ = 0;    // offset in the body
  std::size_t pos_ = 0;   // offset in the input
  std::size_t left_ = 0;  // payload bytes left in the current record
};

// server_name (RFC 6066 section 3): a ServerNameList holding exactly one host_name.
std::optional<failure> parse_server_name(body_reader& rd, std::size_t end,
                                         client_hello_result& out) {
  if (!rd.fits(2, end)) return failure{hello_error::bad_server_name, "SNI extension too short"};
  const std::size_t list = rd.u16();
  if (list != end - rd.at())
    return failure{hello_error::bad_length, "SNI list length does not match its extension"};
  if (list == 0) return failure{hello_error::bad_server_name, "SNI list is empty"};
  if (!rd.fits(3, end)) return failure{hello_error::bad_length, "SNI entry runs past its list"};
  // Other name types have no defined layout, so they could not be skipped; OpenSSL refuses them.
  if (rd.u8() != 0) return failure{hello_error::bad_server_name, "SNI entry is not a host name"};
  const std::size_t length = rd.u16();
  if (!rd.fits(length, end)) return failure{hello_error::bad_length, "SNI name runs past its list"};
  if (length != end - rd.at())
    return failure{hello_error::bad_server_name, "SNI lists more than one name"};
  if (length > 254)  // 253 characters and a trailing dot
    return failure{hello_error::bad_server_name, "SNI host name is too long"};
  std::string raw;
  raw.reserve(length);
  rd.append(length, raw);
  auto name = canonical_host_name(raw);
  if (!name) return failure{hello_error::bad_server_name, "SNI host name is not a DNS name"};
  out.server_name = std::move(*name);
  return std::nullopt;
}

// application_layer_protocol_negotiation (RFC 7301 section 3.1).
std::optional<failure> parse_alpn(body_reader& rd, std::size_t end, client_hello_result& out) {
  if (!rd.fits(2, end)) return failure{hello_error::bad_alpn, "ALPN extension too short"};
  const std::size_t list = rd.u16();
  if (list != end - rd.at())
    return failure{hello_error::bad_length, "ALPN list length does not match its extension"};
  if (list == 0) return failure{hello_error::bad_alpn, "ALPN list is empty"};
  while (rd.at() < end) {
    const std::size_t length = rd.u8();
    if (length == 0) return failure{hello_error::bad_alpn, "ALPN protocol name is empty"};
    if (!rd.fits(length, end))
      return failure{hello_error::bad_length, "ALPN protocol name runs past its list"};
    if (out.alpn.size() == max_alpn_protocols)
      return failure{hello_error::bad_alpn, "ALPN lists more than 32 protocols"};
    rd.append(length, out.alpn.emplace_back());
  }
  return std::nullopt;
}

// supported_versions as a client sends it (RFC 8446 section 4.2.1): a list of 2..254 bytes.
std::optional<failure> parse_supported_versions(body_reader& rd, std::size_t end,
                                                client_hello_result& out) {
  if (!rd.fits(1, end))
    return failure{hello_error::bad_supported_versions, "supported_versions extension too short"};
  const std::size_t list = rd.u8();
  if (list != end - rd.at())
    return failure{hello_error::bad_length,
                   "supported_versions list length does not match its extension"};
  if (list < 2 || list % 2 != 0)
    return failure{hello_error::bad_supported_versions, "supported_versions list is empty or odd"};
  while (rd.at() < end) {
    if (rd.u16() == tls13) out.offers_tls13 = true;
  }
  return std::nullopt;
}

std::optional<failure> parse_extensions(body_reader& rd, client_hello_result& out) {
  const std::size_t end = rd.size();
  if (!rd.fits(2, end)) return failure{hello_error::bad_length, "extensions length cut off"};
  const std::size_t length = rd.u16();
  if (!rd.fits(length, end))
    return failure{hello_error::bad_length, "extensions run past the ClientHello"};
  if (length != end - rd.at())
    return failure{hello_error::bad_length, "bytes left after the extensions"};
  std::bitset<65536> seen;  // fixed 8 KiB, whatever the number of extensions
  while (rd.at() < end) {
    if (!rd.fits(4, end))
      return failure{hello_error::bad_length, "extension header runs past the extensions"};
    const auto type = rd.u16();
    const std::size_t size = rd.u16();
    if (!rd.fits(size, end))
      return failure{hello_error::bad_length, "extension runs past the extensions"};
    if (seen.test(type))
      return failure{hello_error::duplicate_extension, "an extension appears twice"};
    seen.set(type);
    const std::size_t ext_end = rd.at() + size;
    std::optional<failure> f;
    switch (type) {
      case ext_server_name:
        f = parse_server_name(rd, ext_end, out);
        break;
      case ext_alpn:
        f = parse_alpn(rd, ext_end, out);
        break;
      case ext_supported_versions:
        f = parse_supported_versions(rd, ext_end, out);
        break;
      default:
        rd.skip(size);
    }
    if (f) return f;
    assert(rd.at() == ext_end);  // each parser above checks its list fills the extension
  }
  return std::nullopt;
}

// The ClientHello body (RFC 8446 section 4.1.2; TLS 1.0..1.2 hellos have the same layout and
// may end without extensions).
std::optional<failure> parse_body(body_reader& rd, client_hello_result& out) {
  const std::size_t end = rd.size();
  if (!rd.fits(2 + 32 + 1, end))
    return failure{hello_error::bad_length, "ClientHello too short for its fixed fields"};
  out.legacy_version = rd.u16();
  if ((out.legacy_version >> 8) != 3 || (out.legacy_version & 0xFF) < 1)
    return failure{hello_error::bad_version, "ClientHello version is not TLS"};
  rd.skip(32);  // random

  const std::size_t session_id = rd.u8();
  if (session_id > 32) return failure{hello_error::bad_field, "session id longer than 32 bytes"};
  if (!rd.fits(session_id, end))
    return failure{hello_error::bad_length, "session id runs past the ClientHello"};
  rd.skip(session_id);

  if (!rd.fits(2, end)) return failure{hello_error::bad_length, "cipher suites length cut off"};
  const std::size_t suites = rd.u16();
  if (suites == 0 || suites % 2 != 0)
    return failure{hello_error::bad_field, "cipher suite list is empty or odd"};
  if (!rd.fits(suites, end))
    return failure{hello_error::bad_length, "cipher suites run past the ClientHello"};
  rd.skip(suites);

  if (!rd.fits(1, end))
    return failure{hello_error::bad_length, "compression methods length cut off"};
  const std::size_t methods = rd.u8();
  if (methods == 0) return failure{hello_error::bad_field, "no compression method"};
  if (!rd.fits(methods, end))
    return failure{hello_error::bad_length, "compression methods run past the ClientHello"};
  rd.skip(methods);

  if (rd.at() == end) return std::nullopt;  // no extensions: a TLS 1.0..1.2 hello may do that
  return parse_extensions(rd, out);
}

using ascii::is_digit;
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f');
}

// The last label of an IPv4 literal in any form a resolver accepts: decimal or 0x-hex.
bool numeric_label(std::string_view label) {
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x')
    return std::all_of(label.begin() + 2, label.end(), is_hex);
  return std::all_of(label.begin(), label.end(), is_digit);
}

}  // namespace

std::string_view to_string(hello_error e) {
  switch (e) {
    case hello_error::none:
      return "none";
    case hello_error::sslv2:
      return "sslv2";
    case hello_error::not_handshake:
      return "not_handshake";
    case hello_error::bad_record_length:
      return "bad_record_length";
    case hello_error::not_client_hello:
      return "not_client_hello";
    case hello_error::too_large:
      return "too_large";
    case hello_error::bad_length:
      return "bad_length";
    case hello_error::bad_field:
      return "bad_field";
    case hello_error::bad_version:
      return "bad_version";
    case hello_error::duplicate_extension:
      return "duplicate_extension";
    case hello_error::bad_server_name:
      return "bad_server_name";
    case hello_error::bad_alpn:
      return "bad_alpn";
    case hello_error::bad_supported_versions:
      return "bad_supported_versions";
  }
  return "unknown";
}

std::optional<std::string> canonical_host_name(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return std::nullopt;
  std::string out(name);
  std::size_t label_start = 0;
  for (std::size_t i = 0; i <= out.size(); ++i) {
    if (i == out.size() || out[i] == '.') {
      const auto length = i - label_start;
      if (length == 0 || length > 63) return std::nullopt;
      if (out[label_start] == '-' || out[i - 1] == '-') return std::nullopt;
      label_start = i + 1;
      continue;
    }
    char& c = out[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (!is_digit(c) && !(c >= 'a' && c <= 'z') && c != '-') return std::nullopt;
  }
  const auto last_dot = out.rfind('.');
  const auto last = std::string_view(out).substr(last_dot == std::string::npos ? 0 : last_dot + 1);
  if (numeric_label(last)) return std::nullopt;  // 127.0.0.1, 10.1, 0x7f000001
  return out;
}

client_hello_result parse_client_hello(std::span<const std::uint8_t> in, std::size_t max_hello) {
  if (!in.empty() && (in[0] & 0x80))
    return invalid(hello_error::sslv2, "SSLv2-style hello, not a TLS record");

  // First pass: walk the records, checking each header as soon as its bytes arrive and picking
  // the handshake header out of the first payload bytes, until the records hold the whole
  // message. `total` is how many handshake bytes that is: 4 until the length is known.
  std::array<std::uint8_t, handshake_header_size> header{};
  std::size_t header_seen = 0;
  std::size_t total = handshake_header_size;
  std::size_t carried = 0;  // handshake bytes in the records walked so far
  std::size_t off = 0;      // start of the current record in `in`
  std::uint16_t record_version = 0;
  for (;;) {
    const std::size_t avail = in.size() - off;
    if (avail >= 1 && in[off] != content_handshake)
      return invalid(hello_error::not_handshake, "record is not a TLS handshake");
    // legacy_record_version is ignored for all purposes (RFC 8446, section 5.1): clients write
    // 0x0300 to 0x0303 on the first record, and the hello's own fields say what it speaks.
    if (avail < tls_record_header_size)
      return incomplete(tls_record_header_size - avail + (total - carried));
    const std::size_t length = u16_at(in.data() + off + 3);
    if (length == 0 || length > tls_max_record_payload)
      return invalid(hello_error::bad_record_length, "record is empty or over 16384 bytes");
    if (off == 0) record_version = u16_at(in.data() + 1);

    const std::size_t got = std::min(length, avail - tls_record_header_size);
    for (std::size_t i = 0; i < got && header_seen < handshake_header_size; ++i) {
      header[header_seen++] = in[off + tls_record_header_size + i];
      if (header[0] != handshake_client_hello)
        return invalid(hello_error::not_client_hello, "handshake message is not a ClientHello");
      if (header_seen == handshake_header_size) {
        const std::size_t body = (std::size_t{header[1]} << 16) | (header[2] << 8) | header[3];
        if (body > max_hello)
          return invalid(hello_error::too_large,
                         "ClientHello larger than " + std::to_string(max_hello) + " bytes");
        total = handshake_header_size + body;
      }
    }
    // RFC 8446 section 5.1: a ClientHello ends at a record boundary (a key change may follow).
    if (header_seen == handshake_header_size && carried + length > total)
      return invalid(hello_error::bad_length, "record runs past the end of the ClientHello");
    if (got < length) {
      const std::size_t after = total > carried + length ? total - carried - length : 0;
      return incomplete(length - got + (after > 0 ? tls_record_header_size + after : 0));
    }
    carried += length;
    off += tls_record_header_size + length;
    if (header_seen == handshake_header_size && carried == total) break;
  }

  // Second pass: the body, now that every byte of it is in.
  client_hello_result out;
  body_reader rd(in.first(off), total - handshake_header_size);
  if (auto f = parse_body(rd, out)) return invalid(*f);
  out.status = hello_parse::ok;
  out.consumed = off;
  out.record_version = record_version;
  return out;
}

connection_kind sniff_connection(std::span<const std::uint8_t> in) {
  constexpr std::size_t longest_method = 16;  // longer than any registered method
  if (in.empty()) return connection_kind::incomplete;
  if (in[0] == content_handshake) return connection_kind::tls;
  for (std::size_t i = 0; i < in.size() && i <= longest_method; ++i) {
    if (in[i] == ' ') return i > 0 ? connection_kind::http : connection_kind::other;
    if (in[i] < 'A' || in[i] > 'Z') return connection_kind::other;
  }
  return in.size() <= longest_method ? connection_kind::incomplete : connection_kind::other;
}

}  // namespace burrow::proto
